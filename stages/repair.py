"""Stage repair: the post-HIPIFY repair rules on every HIP file.

The work: :mod:`cass.stages.repair`.
"""

from cass.pipeline.context import Stage
from cass.stages.repair import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
