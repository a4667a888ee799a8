"""The operator process: kopf's watches and the work queue wired to the controllers
(`wiring.py`), shards and the forwarding of watcher events between them, and the objects that
run the operator inside a cluster."""
