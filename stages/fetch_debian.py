"""Stage fetch_debian: Debian source packages at pinned versions, unpacked, with their licenses.

The work: :func:`cass.sources.debian.run`.
"""

from cass.pipeline.context import Stage
from cass.sources.debian import run

if __name__ == "__main__":
    run(Stage("fetch_debian"))
