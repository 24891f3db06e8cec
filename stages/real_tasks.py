"""Stage real_tasks: the real-program suite's tasks, read from their upstream mirror and checked by digest.

The work: :mod:`cass.stages.real_tasks`.
"""

from cass.pipeline.context import Stage
from cass.stages.real_tasks import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
