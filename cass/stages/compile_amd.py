"""Stage compile_amd: HIP sources -> host x86 assembly and AMD GPU assembly for every gfx arch.
"""

from __future__ import annotations

from cass.compiling.compile import compile_stage
from cass.pipeline.context import Stage


def run(stage: Stage) -> None:
    compile_stage(stage, vendor="amd", upstream="repair", files_column="hip_files")
