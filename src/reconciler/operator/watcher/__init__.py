"""The watcher: a webhook in each remote cluster reports changes to the operator's listener
(mutual TLS, the operator is the CA), which hands them to the controllers at once."""
