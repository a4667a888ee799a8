"""HTTP plumbing shared by the two services this project serves, the mothership's REST API
(`reconciler.api`) and the component reconciler service (`reconciler.remote`): one error body,
one validation message, one bearer-token check. Neither service imports the other."""
