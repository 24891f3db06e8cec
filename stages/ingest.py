"""Stage ingest: every source file of every origin into the store, with its includes, domain and license.

The work: :mod:`cass.stages.ingest`.
"""

from cass.pipeline.context import Stage
from cass.stages.ingest import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
