"""Component reconciler as a service: the worker side of the internal API, and its client.

`service.create_app` is the stateless HTTP service the mothership delegates component work to
(`reconciler component serve`); `client.ComponentReconcilerClient` is how the mothership calls it.
The wire format lives in `reconciler.model.remote`.
"""
