"""Stage code_digests: for every other stage, the project code it runs, each file with its BLAKE3, and the
values of the parameters it declares.

The work: :mod:`cass.stages.code_digests`.
"""

from cass.pipeline.context import Stage
from cass.stages.code_digests import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
