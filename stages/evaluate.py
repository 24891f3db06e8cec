"""Stage evaluate: the translation benchmark's baselines and predictions files, scored by compiling and running.

The work: :func:`cass.benchmark.stage.run`.
"""

from cass.benchmark.stage import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("evaluate"))
