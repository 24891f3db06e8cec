"""Stage synthesize: CUDA programs written by a language model from the CASS paper's prompt templates (off by
default).

The work: :func:`cass.sources.synthetic.run`.
"""

from cass.pipeline.context import Stage
from cass.sources.synthetic import run

if __name__ == "__main__":
    run(Stage("synthesize"))
