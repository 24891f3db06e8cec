"""Stage filter: the paper's quality filters (length, a kernel, no boilerplate).

The work: :func:`cass.text.filters.run`.
"""

from cass.pipeline.context import Stage
from cass.text.filters import run

if __name__ == "__main__":
    run(Stage("filter"))
