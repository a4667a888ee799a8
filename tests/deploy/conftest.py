"""The simulated Gardener of the infrastructure manager's tests, for its in-cluster test here."""

from tests.infra.conftest import garden, shoot_cluster

__all__ = ["garden", "shoot_cluster"]
