"""Stage execute: both programs of every pair built for an NVIDIA GPU, run on the run host, compared.

The work: :func:`cass.execution.stage.run`.
"""

from cass.execution.stage import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("execute"))
