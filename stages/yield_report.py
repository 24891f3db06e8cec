"""Stage yield_report: per corpus, files compiled by NVIDIA, by AMD, by both, and every failure's cause.

The work: :func:`cass.report.yields.run`.
"""

from cass.pipeline.context import Stage
from cass.report.yields import run

if __name__ == "__main__":
    run(Stage("yield_report"))
