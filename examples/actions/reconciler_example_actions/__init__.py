"""Sample custom actions for the Reconciler (entry-point group `reconciler.actions`)."""
