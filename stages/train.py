"""Stage train: supervised fine-tuning on the instruct export with TRL (off by default).

The work: :mod:`cass.stages.train`.
"""

from cass.pipeline.context import Stage
from cass.stages.train import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
