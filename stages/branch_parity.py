"""Stage branch_parity: the conditionals of each sample's files whose taken branch differs between the vendors.

The work: :func:`cass.compiling.branch_parity.run`.
"""

from cass.compiling.branch_parity import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("branch_parity"))
