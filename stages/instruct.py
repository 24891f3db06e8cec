"""Stage instruct: the instruction-tuning export (chat messages per task).

The work: :mod:`cass.stages.instruct`.
"""

from cass.pipeline.context import Stage
from cass.stages.instruct import run

if __name__ == "__main__":
    run(Stage.of(__file__))
