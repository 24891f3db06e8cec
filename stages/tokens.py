"""Stage tokens: token counts of every training text with the target model's tokenizer.

The work: :mod:`cass.stages.tokens`.
"""

from cass.pipeline.context import Stage
from cass.stages.tokens import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
