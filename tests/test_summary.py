"""`cass summary`: the short end-of-run report, from the metrics a build wrote."""

from __future__ import annotations

import json
from pathlib import Path

from cass.report.summary import summary


def write(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def test_summary_counts_drops_by_stage_and_reason_in_short_lines(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages:\n  fetch_stack: {}\n  filter: {}\n  compile_amd: {}\n"
                                       "  export: {}\n  instruct: {}\n")
    metrics = tmp_path / "metrics"
    write(metrics / "fetch_stack.json", {"in": 0, "kept": 0, "dropped": 0, "dropped_by_reason": {}})
    write(metrics / "filter.json", {"in": 55, "kept": 52, "dropped": 3,
                                    "dropped_by_reason": {"no_kernel": 1, "too_short": 2}})
    write(metrics / "compile_amd.json", {"in": 52, "kept": 48, "dropped": 4,
                                         "dropped_by_reason": {f"compile_failed:reason_{i:03d}": 1 for i in range(4)}})
    write(metrics / "export.json", {"pairs": {"rows": 48}, "kernels": {"rows": 135}})
    write(metrics / "instruct.json", {"in": 282, "kept": 161, "dropped": 121,
                                      "dropped_by_reason": {"identity_translation": 121},
                                      "source": {"rows": 20}, "asm": {"rows": 141}})
    write(metrics / "run" / "compile_amd.json", {"actions": {"hits": 90, "misses": 6}})

    text = summary(tmp_path, width=100)
    lines = text.splitlines()
    assert lines[0] == "Built: 48 file-level pairs, 135 kernel pairs."
    assert "Training examples: source 20, asm 141." in lines
    assert any(line.split()[:4] == ["filter", "55", "->", "52"] and "no_kernel 1, too_short 2" in line
               for line in lines)
    assert any("identity_translation 121" in line for line in lines)
    assert not any(line.strip().startswith("fetch_stack") for line in lines)   # a source switched off
    assert "6 run, 90 from the store" in text and "data/hub/README.md" in text
    assert all(len(line) <= 100 for line in lines)   # a long drop list is cut, not wrapped
    assert any(line.endswith("...") for line in lines if "compile_amd" in line)


def test_a_benchmark_rate_that_is_unknown_is_shown_as_unknown(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages:\n  evaluate: {}\n")
    results = {"reference": {"source": {"compile_rate": 1.0}, "asm": {"compile_rate": 0.5}},
               "model": {"source": {"compile_rate": None}, "asm": {"compile_rate": None}}}   # a compile was stopped
    write(tmp_path / "metrics" / "evaluate.json", {"host": None, "own": {"tasks": 2, "results": results}})
    lines = summary(tmp_path).splitlines()
    assert any("reference" in line and "compiles 100.0%; asm: links 50.0%" in line for line in lines)
    assert any("model" in line and "compiles -; asm: links -" in line for line in lines)
