"""Stage yield_report: per corpus, files compiled by NVIDIA, by AMD, by both, and every failure's cause.

The work: :mod:`cass.stages.yield_report`.
"""

from cass.pipeline.context import Stage
from cass.stages.yield_report import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
