"""Stage compile_nvidia: CUDA sources -> host x86 assembly and SASS for every sm arch.

The work: :mod:`cass.stages.compile_nvidia`.
"""

from cass.pipeline.context import Stage
from cass.stages.compile_nvidia import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
