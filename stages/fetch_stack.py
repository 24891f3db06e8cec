"""Stage fetch_stack: The Stack v2 CUDA subset: metadata from the Hub, file contents from Software Heritage.

The work: :mod:`cass.stages.fetch_stack`.
"""

from cass.pipeline.context import Stage
from cass.stages.fetch_stack import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
