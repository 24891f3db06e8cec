"""Stage clone_repos: whole repositories cloned at pinned commits.

The work: :mod:`cass.stages.clone_repos`.
"""

from cass.pipeline.context import Stage
from cass.stages.clone_repos import run

if __name__ == "__main__":
    Stage.of(__file__).run(run)
