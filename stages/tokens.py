"""Stage tokens: token counts of every training text with the target model's tokenizer.

The work: :func:`cass.training.token_counts.run`.
"""

from cass.pipeline.context import Stage
from cass.training.token_counts import run

if __name__ == "__main__":
    run(Stage("tokens"))
