"""Stage export: the dataset tables (pairs, kernels) as Parquet shards.

The work: :mod:`cass.stages.export`.
"""

from cass.pipeline.context import Stage
from cass.stages.export import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
