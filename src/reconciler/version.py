"""The reconciler's version, in a module below every layer.

The core folds it into the digest of a component's inputs and the CLI prints it; both read it
here, because the package's `__init__` is the public surface at the top of the layers and
importing from it below would turn the layers upside down.
"""

__version__ = "0.1.0"
