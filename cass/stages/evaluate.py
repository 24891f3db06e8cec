"""Stage ``evaluate``: the benchmark's baselines and every predictions file scored on the translation tasks.

Evaluated: each baseline of ``benchmark.baselines`` (:mod:`cass.benchmark.baselines`) and each JSONL or Parquet
file in ``benchmark.predictions_dir`` (under its file name's stem) and the generate stage's predictions (under
``generate.name``, when that stage is on), with the evaluator
(:mod:`cass.benchmark.evaluate`) on the run host ``benchmark.host`` (null: ``execute.host``). Each one's report
goes to ``data/evaluate/<name>/`` (``report.json``, ``report.md``, ``accuracy.png``), and its overall rates to
``metrics/evaluate.json`` (a DVC metric). The stage reads no corpus data, so a corpus change does not rerun it;
its builds are the store's actions that the pipeline's stages also make for origin ``bench``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cass.benchmark.baselines import baseline
from cass.benchmark.scoring import score
from cass.benchmark.tasks import PREDICTION_SUFFIXES, load_tasks, read_predictions
from cass.execution.hosts import resolve_host
from cass.pipeline.context import Stage
from cass.pipeline.manifests import DATA_DIR
from cass.pipeline.metrics import percent, write_metrics, write_run_report
from toolchains.cluster import scheduler_address

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
    taken = set(bench["baselines"]) & set(files)
    if taken:
        raise SystemExit(f"evaluate: predictions named {sorted(taken)[0]!r}, like a baseline: rename the file "
                         "(or generate.name)")
    # every file is read before anything is built: a malformed one fails the stage at once, naming its line
    entries = {name: read_predictions(path, tasks) for name, path in files.items()}
    host = resolve_host(bench["host"] or params["execute"]["host"], scheduler_address(params["executor"]))
    shutil.rmtree(out_dir, ignore_errors=True)   # no report of an earlier name stays behind
    out_dir.mkdir(parents=True)
    results, runs = {}, {}
    for name in [*bench["baselines"], *entries]:
        predictions = entries[name] if name in entries else baseline(name, stage.store, params, tasks)
        summary, report = score(stage.store, params, tasks, name, predictions, host, out_dir / name)
        results[name] = {**summary["by_domain"].get("all", {}), "reference_check": summary["reference_check"]}
        runs[name] = {"builds": report["builds"], "runs": report.get("runs")}
    write_metrics(stage.name, {"tasks": len(tasks), "host": host.name if host else None, "results": results})
    write_run_report(stage.name, {"evaluations": runs})
    scores = "; ".join(f"{name} compiles {percent(r.get('source', {}).get('compile_rate'))}, correct "
                       f"{percent(r.get('source', {}).get('accuracy'))}" for name, r in results.items())
    print(f"evaluate: {len(tasks)} tasks, {len(results)} evaluations ({scores or 'none'}); "
          f"tables in {out_dir}/*/report.md")
