"""Stage hipify: CUDA -> HIP with hipify-perl, one cached action per distinct file.

The work: :mod:`cass.stages.hipify`.
"""

from cass.pipeline.context import Stage
from cass.stages.hipify import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
