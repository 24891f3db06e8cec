"""Stage compile_nvidia: CUDA sources -> host x86 assembly and SASS for every sm arch.

The work: :func:`cass.compiling.compile.compile_stage`.
"""

from cass.compiling.compile import compile_stage
from cass.pipeline.context import Stage

if __name__ == "__main__":
    compile_stage(Stage("compile_nvidia"), vendor="nvidia", upstream="dedup", files_column="files")
