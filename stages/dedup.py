"""Stage dedup: exact and MinHash near-duplicate removal (and decontamination against reference trees).

The work: :func:`cass.dedup.corpus.run`.
"""

from cass.dedup.corpus import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("dedup"))
