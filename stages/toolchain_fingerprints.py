"""Stage toolchain_fingerprints: record which compilers build the dataset (versions and fingerprints).

The work: :mod:`cass.stages.toolchain_fingerprints`.
"""

from cass.pipeline.context import Stage
from cass.stages.toolchain_fingerprints import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
