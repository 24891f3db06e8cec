"""Stage analyze: execute the analysis notebooks of ``analysis/`` headless.

The work: :mod:`cass.stages.analyze` (``python -m stages.analyze --help`` for its options).
"""

import sys

from cass.stages.analyze import main

if __name__ == "__main__":
    sys.exit(main())
