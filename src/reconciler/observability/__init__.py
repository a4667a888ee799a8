"""Logging, metrics and audit: how the system tells operators what it is doing."""
