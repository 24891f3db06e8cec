"""Stage instruct: the instruction-tuning export (chat messages per task).

The work: :func:`cass.training.instruct.run`.
"""

from cass.pipeline.context import Stage
from cass.training.instruct import run

if __name__ == "__main__":
    run(Stage("instruct"))
