"""Stage fetch_stack: The Stack v2 CUDA subset: metadata from the Hub, file contents from Software Heritage.

The work: :func:`cass.sources.stack_v2.run`.
"""

from cass.pipeline.context import Stage
from cass.sources.stack_v2 import run

if __name__ == "__main__":
    run(Stage("fetch_stack"))
