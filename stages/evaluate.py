"""Stage evaluate: the translation benchmark's baselines and predictions files, scored by compiling and running.

The work: :mod:`cass.stages.evaluate`.
"""

from cass.pipeline.context import Stage
from cass.stages.evaluate import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
