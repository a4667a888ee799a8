"""The infrastructure manager: `Runtime` resources become Gardener Shoots and kubeconfig Secrets."""
