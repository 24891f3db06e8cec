"""Stage generate: the translation benchmark's tasks translated by a model (off by default).

The work: :mod:`cass.stages.generate`.
"""

from cass.pipeline.context import Stage
from cass.stages.generate import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
