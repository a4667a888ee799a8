"""Domain types and state machines. No I/O happens in this package."""
