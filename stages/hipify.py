"""Stage hipify: CUDA -> HIP with hipify-perl, one cached action per distinct file.

The work: :func:`cass.translate.hipify.run`.
"""

from cass.pipeline.context import Stage
from cass.translate.hipify import run

if __name__ == "__main__":
    run(Stage("hipify"))
