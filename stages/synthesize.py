"""Stage synthesize: CUDA programs written by a language model from the CASS paper's prompt templates (off by
default).

The work: :mod:`cass.stages.synthesize`.
"""

from cass.pipeline.context import Stage
from cass.stages.synthesize import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
