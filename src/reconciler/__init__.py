"""Reconciler: keeps Kyma-style component sets on Kubernetes clusters in their desired state."""

__version__ = "0.1.0"
