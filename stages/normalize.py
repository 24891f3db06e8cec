"""Stage normalize: normalised SASS and AMD assembly next to the raw texts.

The work: :func:`cass.text.normalize.run`.
"""

from cass.pipeline.context import Stage
from cass.text.normalize import run

if __name__ == "__main__":
    run(Stage("normalize"))
