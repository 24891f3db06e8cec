"""Stage execute: both programs of every pair built for an NVIDIA GPU, run on the run host, compared.

The work: :mod:`cass.stages.execute`.
"""

from cass.pipeline.context import Stage
from cass.stages.execute import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
