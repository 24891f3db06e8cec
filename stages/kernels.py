"""Stage kernels: kernel-level pairs: each kernel's source and assembly on both vendors.

The work: :mod:`cass.stages.kernels`.
"""

from cass.pipeline.context import Stage
from cass.stages.kernels import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
