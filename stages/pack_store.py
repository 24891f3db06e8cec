"""Stage pack_store: the store entries the dataset needs, as pack files DVC shares.

The work: :func:`cass.pipeline.packs.run`.
"""

from cass.pipeline.context import Stage
from cass.pipeline.packs import run

if __name__ == "__main__":
    run(Stage("pack_store"))
