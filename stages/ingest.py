"""Stage ingest: every source file of every origin into the store, with its includes, domain and license.

The work: :func:`cass.sources.ingest.run`.
"""

from cass.pipeline.context import Stage
from cass.sources.ingest import run

if __name__ == "__main__":
    run(Stage("ingest"))
