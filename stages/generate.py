"""Stage generate: the translation benchmark's tasks translated by a model (off by default).

The work: :func:`cass.models.generate.run`.
"""

from cass.models.generate import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("generate"))
