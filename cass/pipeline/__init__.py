"""What every stage shares: the stage context (parameters, store), manifests, metrics, memos, packs,
and the check of dvc.yaml against the code (wiring)."""
