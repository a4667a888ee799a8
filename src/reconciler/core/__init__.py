"""The component reconciler core: render, apply, wait until ready, report; delete; actions."""
