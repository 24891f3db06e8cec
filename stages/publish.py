"""Stage publish: upload data/hub to a Hub dataset repository (off by default).

The work: :mod:`cass.stages.publish`.
"""

from cass.pipeline.context import Stage
from cass.stages.publish import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
