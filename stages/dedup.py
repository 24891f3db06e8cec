"""Stage dedup: exact and MinHash near-duplicate removal (and decontamination against reference trees).

The work: :mod:`cass.stages.dedup`.
"""

from cass.pipeline.context import Stage
from cass.stages.dedup import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
