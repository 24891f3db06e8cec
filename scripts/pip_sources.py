"""Print the package sources pip is configured with as ``uv pip install`` arguments, one per line: setup installs with
uv, from what pip would install from. With ``--cert``, print the certificate bundle pip is told to trust, if any
(setup hands it to uv as ``SSL_CERT_FILE``).

pip's precedence holds: an environment variable (``PIP_FIND_LINKS``) over the ``install`` section over ``global``.
A setting uv cannot be given this way (a proxy, a client certificate) stops setup with its name.
"""

from __future__ import annotations

import ast
import subprocess
import sys

LISTS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint", "trusted-host": "--allow-insecure-host", "only-binary": "--only-binary"}
"""pip settings whose values (space-separated) each become one uv option."""
SWITCHES = {"no-index": ["--no-index"], "pre": ["--prerelease", "allow"]}
"""pip settings that are on or off."""
UNPASSED = ("proxy", "client-cert")
SECTIONS = ("global", "install", ":env:")
"""pip's configuration sections an install reads, the weakest first."""


def pip_settings(config_list: str) -> dict[str, str]:
    """The settings an install reads from ``pip config list``'s output (lines ``section.key='value'``)."""
    chosen: dict[str, tuple[int, str]] = {}
    for line in config_list.splitlines():
        name, _, value = line.partition("=")
        section, _, key = name.rpartition(".")
        if section in SECTIONS and SECTIONS.index(section) >= chosen.get(key, (-1, ""))[0]:
            chosen[key] = (SECTIONS.index(section), ast.literal_eval(value))
    return {key: value for key, (_, value) in chosen.items()}


def uv_arguments(settings: dict[str, str]) -> list[str]:
    """The uv arguments for pip's ``settings``; a setting uv cannot take raises ValueError naming it."""
    if unpassed := sorted(set(settings) & set(UNPASSED)):
        raise ValueError(f"pip's configuration sets {', '.join(unpassed)}, which setup cannot pass to uv: set "
                         "HTTPS_PROXY (and SSL_CLIENT_CERT) in the environment instead, or unset it")
    arguments = [arg for key, value in settings.items() if key in LISTS
                 for item in value.split() for arg in (LISTS[key], item)]
    return arguments + [arg for key, on in SWITCHES.items()
                        if settings.get(key, "").lower() in ("1", "y", "yes", "t", "true", "on") for arg in on]


if __name__ == "__main__":
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=True).stdout
    settings = pip_settings(listed)
    if sys.argv[1:] == ["--cert"]:
        print(settings.get("cert", ""))
    else:
        try:
            print("\n".join(uv_arguments(settings)))
        except ValueError as exc:
            sys.exit(f"setup: {exc}")
