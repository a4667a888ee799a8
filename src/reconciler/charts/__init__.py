"""Charts: sources (local dir, .tgz over HTTP(S), OCI) fetched into a content-addressed cache,
values layering with profiles, renderers (helm_python in-process, `helm template` as fallback)
and the Kyma workspace layout (components.yaml, resources/<name>, installation CRDs)."""
