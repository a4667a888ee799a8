"""The controllers: Kyma (modules through the catalog to Manifests), Manifest and SyncResource
(through the component core onto a target cluster), and the remote Kyma sync with the catalog
and module configuration it copies."""
