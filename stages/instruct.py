"""Stage instruct: the instruction-tuning export (chat messages per task).

The work: :mod:`cass.stages.instruct`.
"""

from cass.pipeline.context import Stage
from cass.stages.instruct import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
