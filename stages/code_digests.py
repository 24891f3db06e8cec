"""Stage code_digests: for every other stage, the project code it runs, each file with its BLAKE3, and the
values of the parameters it declares.

The work: :func:`cass.pipeline.code_digests.run`.
"""

from cass.pipeline.code_digests import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("code_digests"))
