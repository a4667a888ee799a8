"""Progressive rollout of module versions: waves, health gate, halt or rollback
(docs/operator.md, "Progressive rollout")."""
