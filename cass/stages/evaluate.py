"""Stage ``evaluate``: the benchmark's baselines and every predictions file scored on both suites of tasks.

Suites: the own tasks (``benchmark.tasks``; :mod:`cass.benchmark.evaluate`) and the real-program suite (the tasks
stage ``real_tasks`` read, :mod:`cass.benchmark.real_evaluate`). Evaluated on each: every baseline of
``benchmark.baselines`` (:mod:`cass.benchmark.baselines`), each JSONL or Parquet file in
``benchmark.predictions_dir`` (under its file name's stem; its rows go to the suite of their task) and the
generate stage's predictions (under ``generate.name``, when that stage is on), on the run host ``benchmark.host``
(null: ``execute.host``). Reports go to ``data/evaluate/<name>/`` (own suite) and
``data/evaluate/hecbench/<name>/`` (``report.json``, ``report.md``, ``accuracy.png``), the overall rates to
``metrics/evaluate.json`` (``own`` and ``hecbench``: tasks and results per suite; a DVC metric). The stage reads no
corpus data, so a corpus change does not rerun it; its builds are the store's actions that the pipeline's stages
also make for the same programs.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import polars as pl

from cass.benchmark import REAL_SUITE
from cass.benchmark.real_programs import REFERENCES
from cass.benchmark.real_tasks import MANIFEST, read_manifest
from cass.benchmark.scoring import baseline_predictions, run_host, score
from cass.benchmark.tasks import PREDICTION_SUFFIXES, load_tasks, read_predictions
from cass.pipeline.context import Stage
from cass.pipeline.manifests import DATA_DIR
from cass.pipeline.metrics import percent, write_metrics, write_run_report

GENERATED = DATA_DIR / "generate" / "predictions.jsonl"
"""The generate stage's predictions, scored too when that stage is on."""


def run(stage: Stage) -> None:
    out_dir = DATA_DIR / stage.name
    params = stage.params
    bench = params["benchmark"]
    folder = Path(bench["predictions_dir"])
    files = {p.stem: p for p in sorted(folder.iterdir()) if p.suffix in PREDICTION_SUFFIXES} if folder.is_dir() else {}
    if GENERATED.is_file():   # the generate stage's, when it is on
        name = params["generate"]["name"]
        if name in files:
            raise SystemExit(f"evaluate: {files[name]} and the generate stage's predictions (generate.name) are both "
                             f"named {name!r}: rename the file or set another generate.name")
        files[name] = GENERATED
    tasks = load_tasks(Path(bench["tasks"])) if bench["baselines"] or files else {}
    manifest = {t.id: t for t in read_manifest(MANIFEST)[1]}
    available = set(stage.upstream("real_tasks")["sample_id"])
    real = {i: t for i, t in manifest.items() if i in available}
    taken = set(bench["baselines"]) & set(files) | {REAL_SUITE} & set(files)
    if taken:
        raise SystemExit(f"evaluate: predictions named {sorted(taken)[0]!r}, like a baseline or a suite: rename "
                         "the file (or generate.name)")
    # every file is read before anything is built: a malformed one fails the stage at once, naming its line
    entries = {name: read_predictions(path, {**tasks, **manifest}) for name, path in files.items()}
    host = run_host(params)
    shutil.rmtree(out_dir, ignore_errors=True)   # no report of an earlier name stays behind
    out_dir.mkdir(parents=True)
    metrics, runs = {"host": host.name if host else None}, {}
    if real and not REFERENCES.is_file():
        raise SystemExit(f"evaluate: {REFERENCES} is missing: `cass bench-tasks record` writes the real-program "
                         "suite's reference outputs")
    suites = (("own", tasks, None, out_dir),
              (REAL_SUITE, real, pl.read_parquet(REFERENCES) if real else None, out_dir / REAL_SUITE))
    for suite, suite_tasks, references, folder in suites:
        results = {}
        for name in [*(bench["baselines"] if suite_tasks else ()), *entries]:
            started = time.monotonic()
            if name in entries:
                predictions = [p for p in entries[name] if p.task_id in suite_tasks]
            else:
                predictions = baseline_predictions(name, stage.store, params, suite_tasks, references, host)
            if not predictions:
                continue
            # a first run's long part (every build a store miss): a plain line, shown also where stderr is a log
            print(f"evaluate: {suite} suite, {name}: {len(predictions)} predictions, building and scoring",
                  file=sys.stderr, flush=True)
            summary, report = score(stage.store, params, suite_tasks, name, predictions, host, folder / name,
                                    references)
            results[name] = {**summary["by_domain"].get("all", {}), "reference_check": summary["reference_check"]}
            runs[f"{suite}:{name}"] = {"builds": report["builds"], "runs": report.get("runs"),
                                       "wall_s": round(time.monotonic() - started, 1)}
        metrics[suite] = {"tasks": len(suite_tasks), "results": results}
    # a prediction of a real-program task the mirror did not give (stage real_tasks dropped it) is counted, not scored
    metrics[REAL_SUITE]["predictions_of_unavailable_tasks"] = {
        name: n for name, rows in entries.items() if (n := sum(p.task_id in manifest and p.task_id not in real
                                                               for p in rows))}
    write_metrics(stage.name, metrics)
    write_run_report(stage.name, {"evaluations": runs})
    scores = "; ".join(f"{suite} {name} compiles {percent(r.get('source', {}).get('compile_rate'))}, correct "
                       f"{percent(r.get('source', {}).get('accuracy'))}"
                       for suite, _, _, _ in suites for name, r in metrics[suite]["results"].items())
    print(f"evaluate: {len(tasks)} own and {len(real)} real-program tasks ({scores or 'nothing evaluated'}); "
          f"tables in {out_dir}/*/report.md and {out_dir}/{REAL_SUITE}/*/report.md")
    stopped = sum(counts.get("not_run:transient", 0) for suite, _, _, _ in suites
                  for r in metrics[suite]["results"].values()
                  for counts in (r.get("source", {}).get("verdicts", {}), r.get("asm", {}).get("verdicts", {}),
                                 r["reference_check"]))
    if stopped:   # DVC takes this output as up to date: said, never left to be found
        print(f"evaluate: {stopped} predictions and references not_run:transient (a compile or build was stopped; "
              "nothing of it is "
              "recorded): `dvc repro -f evaluate` builds them again", file=sys.stderr)
