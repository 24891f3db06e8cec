"""Stage hub: the Hub dataset layout (configs, shards, card) in data/hub.

The work: :mod:`cass.stages.hub`.
"""

from cass.pipeline.context import Stage
from cass.stages.hub import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
