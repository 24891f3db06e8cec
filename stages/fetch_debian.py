"""Stage fetch_debian: Debian source packages at pinned versions, unpacked, with their licenses.

The work: :mod:`cass.stages.fetch_debian`.
"""

from cass.pipeline.context import Stage
from cass.stages.fetch_debian import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
