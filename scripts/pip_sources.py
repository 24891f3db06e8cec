"""Print the package sources pip is configured with (its index, extra indexes, find-links and constraints files),
as ``uv pip install`` arguments, one per line: setup installs with uv, from what pip would install from.

pip's precedence holds: an environment variable (``PIP_FIND_LINKS``) over the ``install`` section over ``global``.
"""

from __future__ import annotations

import ast
import subprocess
import sys

OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
           "constraint": "--constraint"}
SECTIONS = ("global", "install", ":env:")
"""pip's configuration sections an install reads, the weakest first."""


def uv_arguments(config_list: str) -> list[str]:
    """The uv arguments for ``pip config list``'s output (lines ``section.key='value'``)."""
    chosen: dict[str, tuple[int, str]] = {}
    for line in config_list.splitlines():
        name, _, value = line.partition("=")
        section, _, key = name.rpartition(".")
        if key in OPTIONS and section in SECTIONS:
            rank = SECTIONS.index(section)
            if rank >= chosen.get(key, (-1, ""))[0]:
                chosen[key] = (rank, ast.literal_eval(value))
    return [arg for key, (_, value) in chosen.items() for item in value.split() for arg in (OPTIONS[key], item)]


if __name__ == "__main__":
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=True).stdout
    print("\n".join(uv_arguments(listed)))
