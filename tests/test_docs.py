"""What the documentation cites: every commit id named in README.md, docs/ and bench/RESULTS.md exists in the
history (where the history is there: a shallow clone or an export has none to check against)."""

from __future__ import annotations

import re
import subprocess

import pytest
from harness.project import REPO

COMMIT_ID = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}(?![\w/-])")
"""A short commit id: 7 to 12 hex digits with a letter and a digit, a word of its own."""


def cited_files() -> list:
    return [REPO / "README.md", REPO / "bench" / "RESULTS.md", *sorted((REPO / "docs").rglob("*.md"))]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)


def test_every_commit_the_documents_cite_is_in_the_history():
    if git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.skip("no full git history here to check the cited commits against")
    cited = {(path.relative_to(REPO), c) for path in cited_files() for c in COMMIT_ID.findall(path.read_text())}
    assert len(cited) > 20
    missing = sorted(f"{path}: {c}" for path, c in cited   # a commit, and one of this history (not rebased away)
                     if git("cat-file", "-e", f"{c}^{{commit}}").returncode
                     or git("merge-base", "--is-ancestor", c, "HEAD").returncode)
    assert not missing, f"commit ids not in the history: {missing}"


LINK = re.compile(r"\]\((?!https?:|mailto:)([^)#\s]*)(?:#([^)\s]+))?\)")
"""A relative Markdown link: its file (empty: this one) and its anchor."""


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings, as GitHub makes them."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_finds_its_file_and_heading():
    broken = []
    for path in cited_files():
        for target, anchor in LINK.findall(path.read_text()):
            linked = (path.parent / target).resolve() if target else path
            if not linked.exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
                broken.append(f"{path.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, f"links to nothing: {broken}"


RESULTS_NAMED = re.compile(r"RESULTS\.md[^.]*?(?:\.(?=\s)|$)", re.S)
"""A sentence's rest after it names bench/RESULTS.md: the quoted names in it are the file's sections."""


def test_every_results_section_the_documents_name_is_there():
    headings = re.findall(r"^#{2,3} (.+)$", (REPO / "bench" / "RESULTS.md").read_text(), re.M)
    named = {(path.relative_to(REPO), " ".join(name.split())) for path in cited_files()
             for rest in RESULTS_NAMED.findall(path.read_text()) for name in re.findall(r'"([^"]+)"', rest)}
    assert len(named) > 5
    missing = sorted(f"{path}: {name}" for path, name in named
                     if not any(h == name or h.startswith((f"{name} (", f"{name}:", f"{name},")) for h in headings))
    assert not missing, f"sections bench/RESULTS.md lacks: {missing}"
