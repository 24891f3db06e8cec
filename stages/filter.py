"""Stage filter: the paper's quality filters (length, a kernel, no boilerplate).

The work: :mod:`cass.stages.filter`.
"""

from cass.pipeline.context import Stage
from cass.stages.filter import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
