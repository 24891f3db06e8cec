"""The development corpora of the yield benchmark and their split into ``tune`` and ``check``.

Rules of the repair layer are written from the failures of the ``tune`` half only; the ``check``
half is only measured (bench/yield.py reports both). The split is made by a seeded hash of each
corpus's name, before any rule is written from the corpora, and committed in
``bench/corpora.yaml``; the four Debian packages rules were written from before the split
(``TUNE_BY_HISTORY``) are ``tune`` whatever their hash says. Whole Debian packages are split; the
HeCBench development copy is split by benchmark (named ``hecbench/<benchmark>``).

    python bench/corpora.py [--hecbench ../shared/hecbench]   # rewrites bench/corpora.yaml
"""

from __future__ import annotations

import argparse
from pathlib import Path

import blake3
import yaml

REPO = Path(__file__).resolve().parents[1]
SPLIT_FILE = REPO / "bench" / "corpora.yaml"
SEED = "cass-dev-split-1"
TUNE_BY_HISTORY = ("pytorch", "faiss", "gromacs", "starpu")
"""Packages the repair rules were written from before the split existed."""
HECBENCH = REPO.parent / "shared" / "hecbench"


def split_of(name: str, seed: str = SEED) -> str:
    """``check`` when the first byte of BLAKE3(``<seed>:<name>``) is odd, else ``tune``."""
    if name in TUNE_BY_HISTORY:
        return "tune"
    return "check" if blake3.blake3(f"{seed}:{name}".encode()).digest()[0] & 1 else "tune"


def hecbench_benchmarks(root: Path) -> list[str]:
    """The benchmarks of a HeCBench copy that have a CUDA folder (``src/<name>-cuda``)."""
    return sorted(p.name.removesuffix("-cuda") for p in (root / "src").iterdir()
                  if p.is_dir() and p.name.endswith("-cuda"))


def make_split(packages: list[str], benchmarks: list[str], seed: str = SEED) -> dict:
    """The committed form: each package's half, and the HeCBench benchmarks of each half."""
    halves = {b: split_of(f"hecbench/{b}", seed) for b in benchmarks}
    return {
        "seed": seed,
        "tune_by_history": list(TUNE_BY_HISTORY),
        "packages": {p: split_of(p, seed) for p in sorted(packages)},
        "hecbench": {half: [b for b in benchmarks if halves[b] == half] for half in ("tune", "check")},
    }


def load_split(path: Path = SPLIT_FILE) -> dict:
    return yaml.safe_load(path.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hecbench", type=Path, default=HECBENCH)
    args = parser.parse_args()
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    packages = [p["name"] for p in params["debian_sources"]["packages"]]
    split = make_split(packages, hecbench_benchmarks(args.hecbench))
    header = ("# The development corpora split into tune (failures read, rules written from them) and check (only\n"
              "# measured): made by bench/corpora.py from params.yaml's debian_sources and the HeCBench copy.\n")
    SPLIT_FILE.write_text(header + yaml.safe_dump(split, sort_keys=False, width=110))


if __name__ == "__main__":
    main()
