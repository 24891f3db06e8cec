"""Stage compile_nvidia: CUDA sources -> host x86 assembly and SASS for every sm arch.
"""

from __future__ import annotations

from cass.compiling.compile import compile_stage
from cass.pipeline.context import Stage


def run(stage: Stage) -> None:
    compile_stage(stage, vendor="nvidia", upstream="dedup", files_column="files")
