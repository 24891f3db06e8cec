"""Stage normalize: normalised SASS and AMD assembly next to the raw texts.

The work: :mod:`cass.stages.normalize`.
"""

from cass.pipeline.context import Stage
from cass.stages.normalize import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
