"""Stage pack_store: the store entries the dataset needs, as pack files DVC shares.

The work: :mod:`cass.stages.pack_store`.
"""

from cass.pipeline.context import Stage
from cass.stages.pack_store import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
