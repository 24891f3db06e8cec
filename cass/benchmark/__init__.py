"""The translation benchmark: its tasks, the evaluator of predictions, the baselines and the report."""
