"""The translation benchmark: its tasks, the evaluator of predictions, the baselines and the report."""

REAL_SUITE = "hecbench"
"""The real-program suite's name: its tasks' id prefix and origin, its reports' folder, its Hub config's suffix."""
BASELINES = ("reference", "identity", "hipify-perl", "pipeline", "rocm-scribe")
"""The baselines of both suites (:mod:`cass.benchmark.baselines`)."""
REAL_BASELINES = (*BASELINES, "mutant")
"""The baselines of the real-program suite: also one mutant of each human port."""
