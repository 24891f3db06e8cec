"""Stage toolchain_fingerprints: record which compilers build the dataset (versions and fingerprints).

The work: :func:`cass.compiling.fingerprints.run`.
"""

from cass.compiling.fingerprints import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("toolchain_fingerprints"))
