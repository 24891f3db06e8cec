"""Stage analyze: execute the analysis notebooks of ``analysis/`` headless. The work:
:mod:`cass.report.notebooks` (``python -m stages.analyze --help`` for its options)."""

import sys

from cass.report.notebooks import main

if __name__ == "__main__":
    sys.exit(main())
