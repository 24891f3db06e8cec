"""Stage compile_amd: HIP sources -> host x86 assembly and AMD GPU assembly for every gfx arch.

The work: :func:`cass.compiling.compile.compile_stage`.
"""

from cass.compiling.compile import compile_stage
from cass.pipeline.context import Stage

if __name__ == "__main__":
    compile_stage(Stage("compile_amd"), vendor="amd", upstream="repair", files_column="hip_files")
