"""Stage train: supervised fine-tuning on the instruct export with TRL (off by default).

The work: :func:`cass.models.train.run`.
"""

from cass.models.train import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("train"))
