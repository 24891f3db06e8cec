"""Stage repair: the post-HIPIFY repair rules on every HIP file.

The work: :func:`cass.translate.repair_files.run`.
"""

from cass.pipeline.context import Stage
from cass.translate.repair_files import run

if __name__ == "__main__":
    run(Stage("repair"))
