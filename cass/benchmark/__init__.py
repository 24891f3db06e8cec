"""The translation benchmark: its tasks, the evaluator of predictions, the baselines and the report."""

REAL_SUITE = "hecbench"
"""The real-program suite's name: its tasks' id prefix and origin, its reports' folder, its Hub config's suffix."""
