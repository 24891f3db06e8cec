"""Stage clone_repos: whole repositories cloned at pinned commits.

The work: :func:`cass.sources.repositories.run`.
"""

from cass.pipeline.context import Stage
from cass.sources.repositories import run

if __name__ == "__main__":
    run(Stage("clone_repos"))
