"""The module catalog: which ModuleTemplate, version and source a Kyma's module gets, and where
a module's objects come from (a Helm chart, a raw manifest, an OCI layer)."""
