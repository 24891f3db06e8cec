"""Stage publish: upload data/hub to a Hub dataset repository (off by default).

The work: :func:`cass.hub.publish.run`.
"""

from cass.hub.publish import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("publish"))
