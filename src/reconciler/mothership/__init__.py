"""The control plane: scheduler, workers, invokers, bookkeeper, cleaner, and their wiring."""
