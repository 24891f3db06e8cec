"""Stage branch_parity: the conditionals of each sample's files whose taken branch differs between the vendors.

The work: :mod:`cass.stages.branch_parity`.
"""

from cass.pipeline.context import Stage
from cass.stages.branch_parity import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
