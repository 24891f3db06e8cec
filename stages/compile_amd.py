"""Stage compile_amd: HIP sources -> host x86 assembly and AMD GPU assembly for every gfx arch.

The work: :mod:`cass.stages.compile_amd`.
"""

from cass.pipeline.context import Stage
from cass.stages.compile_amd import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
