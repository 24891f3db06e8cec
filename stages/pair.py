"""Stage pair: keep the samples that compiled on both vendor stacks.

The work: :func:`cass.compiling.pairing.run`.
"""

from cass.compiling.pairing import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("pair"))
