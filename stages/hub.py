"""Stage hub: the Hub dataset layout (configs, shards, card) in data/hub.

The work: :func:`cass.hub.layout.run`.
"""

from cass.hub.layout import run
from cass.pipeline.context import Stage

if __name__ == "__main__":
    run(Stage("hub"))
