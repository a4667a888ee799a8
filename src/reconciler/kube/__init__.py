"""Cluster access: client from a kubeconfig, discovery/REST mapping, apply, readiness, delete."""
