"""The clusters the controllers work on: the operator's resources on the control plane, the
target cluster of each module, the watches on them, what the operator was told about its fleet,
and the CRDs it installs."""
