"""Stage pair: keep the samples that compiled on both vendor stacks.

The work: :mod:`cass.stages.pair`.
"""

from cass.pipeline.context import Stage
from cass.stages.pair import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
