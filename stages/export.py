"""Stage export: the dataset tables (pairs, kernels) as Parquet shards.

The work: :func:`cass.training.export.run`.
"""

from cass.pipeline.context import Stage
from cass.training.export import run

if __name__ == "__main__":
    run(Stage("export"))
