"""The external REST API (v1) of the mothership: FastAPI app, auth, errors, audit wiring."""

from reconciler.api.app import create_app
from reconciler.api.settings import ApiConfigError, ApiSettings

__all__ = ["ApiConfigError", "ApiSettings", "create_app"]
