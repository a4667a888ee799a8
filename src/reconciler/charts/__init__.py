"""Chart sources (local dir, .tgz over HTTP(S), OCI), values layering with profiles, renderers."""
