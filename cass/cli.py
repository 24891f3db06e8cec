"""`cass` command line.

    cass toolchains           what toolchains were found, their versions, and why a piece is missing; in a
                              pipeline project, recorded for stage toolchain_fingerprints (.cass/toolchains.json)
    cass toolchains --cluster the Dask cluster's hosts: resources, tools and fingerprints
    cass amd-root seal|pin|pull   the AMD root as a stored tree: seal it, pin it for DVC, pull the pinned one
    cass store stats          object and action counts and sizes
    cass store verify         re-hash every stored object; report (and set aside) corrupt ones
    cass store gc             remove objects and actions no current manifest needs
    cass summary [PROJECT]    what the last build made and dropped (by stage and reason), where its outputs are
    cass wiring [PROJECT]     check dvc.yaml against the code: each stage depends on its code's digest
    cass gpu-batch export DIR build the pairs' programs into a batch for a GPU host this machine cannot reach
    cass gpu-batch import DIR --name NAME   bring a batch's runs (results.json) into the store as GPU host NAME
    cass gpu-batch merge OUT DIR...         several batches as one
    cass bench-tasks build|export DIR|record   the real-program suite's tasks and reference outputs
    cass bench-tasks export-own DIR|record-own  the own suite's hidden outputs and kernel counts
    cass eval --predictions FILE | --baseline NAME   score predictions on the translation benchmark
    cass generate [--backend B] [--model M]      translate the benchmark's tasks with a model
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from cass.benchmark import REAL_BASELINES, REAL_SUITE
from cass.engine.actions import toolchain_record
from cass.engine.placement import Placement, cluster_at
from cass.pipeline.context import PIPELINE_FILE, load_params, open_store
from cass.pipeline.manifests import MACHINE_RECORD, live_set, write_record
from cass.pipeline.wiring import report as wiring_report
from cass.report.summary import summary
from cass.toolchain_root import RootPullError, pin_root, pull_root, root_state, seal_root
from cass.translate.names import toolchain_names
from hosts.cluster import NoHostError, ToolchainMismatchError
from store import Store
from store.tree import tree_blobs
from toolchains import (
    AMD_SUITES,
    HipNvidiaToolchain,
    Toolchain,
    ToolchainMissingError,
    amd_root_path,
    load_hip_nvidia,
    load_toolchains,
)
from toolchains.amd_root import read_seal
from toolchains.sandbox import detect as detect_sandbox
from toolchains.system import header_parity


def print_toolchain(vendor: str, tc: Toolchain, fingerprints: bool = False) -> int:
    """Print one toolchain's tools and library headers; return how many tools are missing."""
    missing = 0
    print(f"{vendor}:")
    for tool in tc.tools():
        status = tc.status(tool)
        if status.problem:
            missing += 1
            where = status.path or tc.launcher or "the connected hosts"
            print(f"  {tool:12s} MISSING  {status.problem} (looked at {where})")
        else:
            print(f"  {tool:12s} {status.path}\n  {'':12s} {status.version}")
            if fingerprints:
                print(f"  {'':12s} fingerprint {tc.fingerprint(tool)}")
    lacking = tc.missing_libraries()
    libraries = ", ".join(f"{lib}{' MISSING' if lib in lacking else ''}" for lib, _ in tc.library_headers)
    print(f"  {'libraries':12s} {libraries} (headers in {tc.include_root()})")
    if optional := getattr(tc, "optional_library_headers", ()):
        print(f"  {'also':12s} " + ", ".join(f"{lib}{'' if (tc.include_root() / header).is_file() else ' (not here)'}"
                                           for lib, header in optional))
    if lacking:
        print(f"  files that use {', '.join(lacking)} will fail as missing_header")
    if lacking or missing:
        print(f"  how to install: {tc.install_hint}")
    return missing


def print_header_parity(toolchains: dict[str, Toolchain]) -> int:
    """Print which system libraries' headers each side finds; return how many one side lacks."""
    parity = header_parity(toolchains["nvidia"].system_include_dirs(), toolchains["amd"].system_include_dirs())
    lacking = {name: [v for v, ok in sides.items() if not ok] for name, sides in parity.items()}
    lacking = {name: sides for name, sides in lacking.items() if sides}
    print(f"system libraries: {len(parity) - len(lacking)}/{len(parity)} on both sides"
          + "".join(f"\n  {name}: missing on {' and '.join(sides)}" for name, sides in sorted(lacking.items())))
    if lacking:
        print("  how to install: bash scripts/setup.sh (toolchains/system.py lists the packages of both sides)")
    return len(lacking)


def cmd_toolchains(args: argparse.Namespace) -> int:
    if args.cluster is not None:
        params = load_params()
        scheduler = Placement.of(params).scheduler
        status = cluster_toolchains(args.cluster or scheduler)
        if scheduler and args.cluster in ("", scheduler):   # the hosts the pipeline builds with
            record_for_pipeline(params)
        return status
    params = load_params()
    suite = args.amd_suite or params["amd"]["toolchain"]
    toolchains = load_toolchains(suite)
    missing = sum(print_toolchain(vendor, tc) for vendor, tc in toolchains.items())
    if not os.environ.get("CASS_ROCM_PATH"):
        print(root_state(suite, params["amd"].get("root") if suite == params["amd"]["toolchain"] else None))
    if not missing:
        print_header_parity(toolchains)
        hip_nvidia = load_hip_nvidia()
        if problem := hip_nvidia.status("nvcc").problem:
            print(f"CUDA->HIP names not derived: HIP on NVIDIA: {problem}. {hip_nvidia.install_hint}")
        else:
            names = toolchain_names(toolchains["nvidia"], toolchains["amd"], hip_nvidia)
            print(f"CUDA->HIP names derived: {names.summary()}")
    mode = detect_sandbox().mode
    print(f"sandbox: {mode}" + ("" if mode == "bwrap" else
                                " (bubblewrap missing or refused: tools can read this host's files; "
                                "apt-get install bubblewrap)"))
    if suite == params["amd"]["toolchain"]:
        record_for_pipeline(params)
    elif PIPELINE_FILE.exists():
        print(f"not recorded in {MACHINE_RECORD}: --amd-suite {suite} is not params.yaml's amd.toolchain")
    return 1 if missing else 0


def record_for_pipeline(params: dict) -> None:
    """In a pipeline project (a dvc.yaml here), record for stage toolchain_fingerprints the toolchains ``params`` place
    (this machine's, or a scheduler's hosts'), or say why not."""
    if not PIPELINE_FILE.exists():
        return
    scheduler = Placement.of(params).scheduler
    try:
        record = toolchain_record(params)
    except (ToolchainMissingError, NoHostError, ToolchainMismatchError, OSError, subprocess.SubprocessError) as exc:
        print(f"not recorded in {MACHINE_RECORD} for stage toolchain_fingerprints: {exc}")
        return
    first = not MACHINE_RECORD.exists()
    changed = write_record(record, MACHINE_RECORD)
    state = "first record" if first else "changed: `dvc repro` rebuilds with them" if changed else "unchanged"
    whose = f"the hosts' of {scheduler}" if scheduler else "this machine's"
    print(f"recorded in {MACHINE_RECORD} for stage toolchain_fingerprints ({whose}): {state}")


def cluster_toolchains(address: str | None) -> int:
    """List the cluster's hosts (resources, fingerprints) and the toolchains they make up."""
    if not address:
        print("no scheduler: pass --cluster tcp://HOST:PORT, set CASS_SCHEDULER or params.yaml executor.scheduler")
        return 2
    cluster = cluster_at(address)   # the connection placement uses too
    hosts = cluster.hosts()
    print(f"scheduler {address}: {len(hosts)} host(s)")
    for h in hosts:
        resources = ", ".join(f"{r}={n:g}" for r, n in sorted(h.resources.items())) or "none"
        print(f"  {h.name}  {h.address}  threads {h.nthreads}  resources {resources}")
        for vendor, report in sorted(h.reports.items()):
            for tool, fp in report.fingerprints().items():
                print(f"    {vendor:10s} {tool:12s} {fp or 'MISSING'}")
    problems = 0
    for vendor in ("nvidia", "amd"):
        try:
            problems += print_toolchain(f"{vendor} (as the hosts have it)", cluster.toolchain(vendor, hosts), True)
        except (NoHostError, ToolchainMismatchError) as exc:
            problems += 1
            print(f"{vendor}: {exc}")
    placement = Placement(address, None, 0.0)
    hip_nvidia = placement.toolchain(HipNvidiaToolchain.vendor)
    where = "as the hosts have it" if placement.hosts_serve(hip_nvidia.vendor) else \
        "no host serves it: this machine's"
    return 1 if problems + print_toolchain(f"{hip_nvidia.vendor} ({where})", hip_nvidia, True) else 0


def cmd_store_stats(_: argparse.Namespace) -> int:
    store = open_store(load_params())
    s = store.stats()
    print(f"store {store.root}")
    print(f"  objects  {s.objects:>9d}  {s.object_bytes / 2**20:10.1f} MiB")
    print(f"  actions  {s.actions:>9d}  {s.action_bytes / 2**20:10.1f} MiB")
    return 0


def cmd_store_verify(_: argparse.Namespace) -> int:
    store = open_store(load_params())
    bad = store.verify()
    for digest in bad:
        print(f"corrupt: {digest} (moved aside; `dvc repro --force` recomputes it, all else is a hit)")
    print(f"verified store {store.root}: {len(bad)} corrupt object(s)")
    return 1 if bad else 0


def cmd_amd_root(args: argparse.Namespace) -> int:
    params = load_params()
    suite, store = args.suite or params["amd"]["toolchain"], open_store(params)
    pin = params["amd"].get("root") if suite == params["amd"]["toolchain"] else None
    if args.root_command == "pull":
        try:
            sealed = pull_root(store, suite, pin)
        except RootPullError as exc:
            print(f"amd-root: not pulled: {exc}", file=sys.stderr)
            return 3
        print(f"amd-root: {amd_root_path(suite)} is the pinned root {sealed.root} ({sealed.origin})")
    elif args.root_command == "pin":
        pin_root(store, suite, Path("params.yaml"))
    else:
        sealed = seal_root(store, suite)
        print(f"amd-root: {amd_root_path(suite)} sealed as tree {sealed.root} ({sealed.origin}, {sealed.sealed})")
    return 0


def kept_roots(store: Store, params: dict) -> set[str]:
    """The blobs of the pinned AMD root and of this machine's sealed root, where the store holds their trees."""
    seal = read_seal(amd_root_path(params["amd"]["toolchain"]))
    roots = {params["amd"].get("root"), seal.root if seal else None} - {None}
    return {blob for digest in roots if store.has(digest) for blob in tree_blobs(store, digest)}


def cmd_store_gc(args: argparse.Namespace) -> int:
    params = load_params()
    store = open_store(params)
    live = live_set(store)
    roots = kept_roots(store, params)
    result = store.gc(live.objects | roots, live.actions)
    print(f"gc {store.root}: kept {len(live.objects)} objects and {len(live.actions)} actions named by the current "
          f"manifests and {len(roots)} blobs of AMD roots; removed {result.objects} objects "
          f"({result.object_bytes / 2**20:.1f} MiB), "
          f"{result.actions} actions, {result.temp_files} stale temporary files")
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    print(summary(Path(args.project)))
    return 0


def cmd_wiring(args: argparse.Namespace) -> int:
    problems = wiring_report(Path(args.project))
    print("\n".join(problems) or "wiring: every stage depends on its code's digest; no stage imports another")
    return 1 if problems else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cass", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    toolchains = sub.add_parser("toolchains", help="check the NVIDIA and AMD toolchains")
    toolchains.add_argument("--amd-suite", choices=sorted(AMD_SUITES),
                            help="the AMD root to check (default: params.yaml amd.toolchain)")
    toolchains.add_argument("--cluster", nargs="?", const="", metavar="ADDRESS",
                            help="list the hosts of a Dask cluster (default: CASS_SCHEDULER / executor.scheduler)")
    toolchains.set_defaults(func=cmd_toolchains)
    root = sub.add_parser("amd-root", help="the AMD root as a stored tree (docs/setup.md)")
    root.add_argument("root_command", choices=("seal", "pin", "pull"),
                      help="seal: prune and store this machine's root; pin: write its packs to amd_root/ and "
                           "pin it in params.yaml; pull: check out the pinned root from the DVC remote")
    root.add_argument("--suite", choices=sorted(AMD_SUITES), help="the root's suite (default: amd.toolchain)")
    root.set_defaults(func=cmd_amd_root)
    store = sub.add_parser("store", help="inspect the artifact store").add_subparsers(dest="store_command",
                                                                                        required=True)
    store.add_parser("stats", help="counts and sizes").set_defaults(func=cmd_store_stats)
    store.add_parser("verify", help="check every object's digest").set_defaults(func=cmd_store_verify)
    store.add_parser("gc", help="remove what no current manifest references").set_defaults(func=cmd_store_gc)
    report = sub.add_parser("summary", help="what the last build made and dropped, and where its outputs are")
    report.add_argument("project", nargs="?", default=".", help="the pipeline checkout (default: here)")
    report.set_defaults(func=cmd_summary)
    wiring = sub.add_parser("wiring", help="check that each stage depends on the digest of its code")
    wiring.add_argument("project", nargs="?", default=".", help="the pipeline checkout (default: here)")
    wiring.set_defaults(func=cmd_wiring)
    batch = sub.add_parser("gpu-batch", help="run the pairs' programs on a GPU host reached by copying files")
    batch_sub = batch.add_subparsers(dest="batch_command", required=True)
    batch_export = batch_sub.add_parser("export", help="build the programs and write a batch directory")
    batch_export.add_argument("folder", type=Path)
    batch_export.add_argument("--missing-for", metavar="NAME", help="only the runs the store lacks for recorded GPU "
                              "host NAME (what changed since its last batch)")
    batch_import = batch_sub.add_parser("import", help="record a batch's results as runs of a named GPU host")
    batch_import.add_argument("folder", type=Path)
    batch_import.add_argument("--name", required=True, help="the GPU host's name (gpu_hosts/<name>.json)")
    batch_merge = batch_sub.add_parser("merge", help="several batches as one (a GPU host runs them at once, the "
                                       "first batch's runs first)")
    batch_merge.add_argument("folder", type=Path)
    batch_merge.add_argument("batches", type=Path, nargs="+")
    batch.set_defaults(func=cmd_gpu_batch)
    tasks = sub.add_parser("bench-tasks", help="the real-program suite: its task manifest and reference outputs")
    tasks_sub = tasks.add_subparsers(dest="tasks_command", required=True)
    tasks_sub.add_parser("build", help="write the task manifest from the mirror (benchmark.real.source)")
    tasks_export = tasks_sub.add_parser("export", help="build the tasks' programs into a batch for a GPU host")
    tasks_export.add_argument("folder", type=Path)
    tasks_export.add_argument("--missing-for", metavar="NAME", help="only the runs the store lacks for GPU host NAME")
    tasks_record = tasks_sub.add_parser("record", help="the reference outputs from a GPU host's runs")
    tasks_record.add_argument("--name", required=True, help="the recorded GPU host (gpu_hosts/<name>.json)")
    own_export = tasks_sub.add_parser("export-own", help="the own suite's programs on its visible and hidden "
                                      "arguments, as a batch for a GPU host")
    own_export.add_argument("folder", type=Path)
    own_record = tasks_sub.add_parser("record-own", help="the own suite's hidden outputs and kernel counts from a GPU "
                                      "host's runs")
    own_record.add_argument("--name", required=True, help="the recorded GPU host (gpu_hosts/<name>.json)")
    tasks.set_defaults(func=cmd_bench_tasks)
    gen = sub.add_parser("generate", help="translate the benchmark's tasks with a model (params.yaml generate)")
    gen.add_argument("--backend", choices=("transformers", "openai"), help="default: generate.backend")
    gen.add_argument("--model", help="a model directory, tiny-qwen2 or the server's model (default: generate.model)")
    gen.add_argument("--base-url", help="the OpenAI-compatible server (default: generate.base_url)")
    gen.add_argument("--tasks", type=Path, help="default: benchmark.tasks")
    gen.add_argument("--out", type=Path, default=Path("predictions/generated.jsonl"),
                     help="where the predictions go (the evaluate stage scores every file in predictions/)")
    gen.set_defaults(func=cmd_generate)
    evaluation = sub.add_parser("eval", help="score predictions (or a baseline) on the translation benchmark")
    what = evaluation.add_mutually_exclusive_group(required=True)
    what.add_argument("--predictions", type=Path, help="JSONL or Parquet of {task_id, task: source|asm, prediction} "
                      "(a real-program task's prediction: the main file's text, or {path: text})")
    what.add_argument("--baseline", choices=REAL_BASELINES, help="mutant: the real-program suite only")
    evaluation.add_argument("--suite", choices=("own", REAL_SUITE), default="own",
                            help="the own tasks (--tasks), or the real-program suite (benchmark.real)")
    evaluation.add_argument("--tasks", type=Path, default=Path("translation_bench/tasks"))
    evaluation.add_argument("--host", help="where programs run (default: params.yaml execute.host)")
    evaluation.add_argument("--out", type=Path, help="report folder (default: eval_results/<name>)")
    evaluation.add_argument("--export-batch", type=Path, metavar="DIR",
                            help="build, then write the programs to run as a batch for a GPU host (runs nothing; "
                            "the mutant baseline chooses with the selection runs --host recorded:NAME holds)")
    evaluation.set_defaults(func=cmd_eval)
    return parser


def cmd_generate(args: argparse.Namespace) -> int:
    from cass.benchmark.generate import generate, write_predictions
    from cass.benchmark.tasks import load_tasks
    from cass.models.backends import BackendUnavailable, load_backend

    params = load_params()
    overrides = {"backend": args.backend, "model": args.model, "base_url": args.base_url}
    params["generate"].update({k: v for k, v in overrides.items() if v is not None})
    backend = load_backend(params["generate"], params["tiny_model"])
    try:
        rows, facts = generate(open_store(params), params,
                               load_tasks(args.tasks or Path(params["benchmark"]["tasks"])), backend)
    except BackendUnavailable as exc:
        sys.exit(f"cass generate: {exc}; the completions that came back are kept: run again to resume")
    write_predictions(rows, args.out)
    report = facts["report"]
    print(f"{len(rows)} predictions in {args.out}: {report['generated']} generated, {report['hits']} from the store, "
          f"{report['wall_s']} s; model {facts['model']}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from cass.benchmark.baselines import choose_mutants
    from cass.benchmark.evaluate import evaluate
    from cass.benchmark.real_evaluate import evaluate_real
    from cass.benchmark.real_programs import load_suite
    from cass.benchmark.scoring import baseline_predictions, run_host, score
    from cass.benchmark.tasks import PredictionsError, load_tasks, read_predictions
    from cass.execution.batch import write_batch
    from cass.pipeline.context import Stage

    params = Stage("evaluate").params   # what the evaluate stage declares: the CLI reads no other parameter
    store = open_store(params)
    real = args.suite == REAL_SUITE
    references = None
    if real:
        tasks, problems, references = load_suite(store, params)
        if problems:
            print(f"cass eval: {len(problems)} tasks left out, their files do not check against the mirror: "
                  f"{next(iter(problems.values()))}", file=sys.stderr)
        if not tasks or references is None:
            mirror = params["benchmark"]["real"]["source"]
            print(f"cass eval: no task of the real-program suite to score (mirror {mirror}, references "
                  f"{'recorded' if references is not None else 'missing'})", file=sys.stderr)
            return 2
    else:
        tasks = load_tasks(args.tasks)
    try:   # a malformed file fails before anything is built
        predictions = None if args.baseline else read_predictions(args.predictions, tasks)
    except PredictionsError as exc:
        print(f"cass eval: {exc}", file=sys.stderr)
        return 2
    host = None   # an export runs nothing: only the mutant baseline's choice reads the runs a --host has
    if not args.export_batch or (args.host and args.baseline == "mutant"):
        host = run_host(params, args.host)
    if args.export_batch and host is not None and host.live:
        print(f"cass eval: --export-batch runs nothing; give the mutant baseline a recorded host (--host "
              f"recorded:NAME), not {host.name}", file=sys.stderr)
        return 2
    selection: set = set()   # the mutant baseline's selection runs, which a batch for it carries too
    if predictions is None and real and args.baseline == "mutant":
        choice = choose_mutants(store, params, tasks, host)
        predictions, selection = choice.predictions, choice.planned
        print(choice.said())
    elif predictions is None:
        predictions = baseline_predictions(args.baseline, store, params, tasks, references, host)
    name = args.baseline or args.predictions.stem
    if args.export_batch:
        execute = params["execute"]
        if real:
            _, report = evaluate_real(store, params, tasks, references, predictions, None, build_programs=True)
        else:
            _, report = evaluate(store, params, tasks, predictions, None, build_programs=True)
        planned = {r for runs in report["planned"].values() for r in runs} | selection
        runs = write_batch(store, args.export_batch, planned, execute)
        print(f"{len(report['binaries'])} binaries, {runs} runs in {args.export_batch}: run them on a GPU host "
              f"(python -m hosts.gpu run-batch), import them (cass gpu-batch import), then evaluate with "
              "--host recorded:<name>")
        return 0
    out = args.out or Path("eval_results") / (f"{REAL_SUITE}/{name}" if real else name)
    _, report = score(store, params, tasks, name, predictions, host, out, references)
    made = ", ".join(f"{kind} {c['misses']} built, {c['hits']} from the store" for kind, c in report["builds"].items())
    print(f"report: {out / 'report.json'}, {out / 'report.md'}, {out / 'accuracy.png'} ({made})")
    return 0


def cmd_bench_tasks(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from tqdm import tqdm

    from cass.benchmark.real_programs import load_suite, plan_recording, record, write_recorded
    from cass.benchmark.real_tasks import MANIFEST, build_manifest
    from cass.execution.batch import not_recorded, write_batch
    from cass.execution.hosts import resolve_host

    params = load_params()
    real = params["benchmark"]["real"]
    mirror = Path(real["source"])
    if args.tasks_command in ("export-own", "record-own"):
        return own_references(args, params)
    if args.tasks_command == "build":
        manifest = build_manifest(mirror, real["upstream"], lambda names: tqdm(names, desc="tasks", unit="benchmark"))
        MANIFEST.parent.mkdir(parents=True, exist_ok=True)
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{len(manifest['tasks'])} tasks in {MANIFEST}; left out: {manifest['left_out_by_reason']}")
        return 0
    store = open_store(params)
    placement = Placement.of(params)
    by_id, problems, _ = load_suite(store, params)
    tasks = list(by_id.values())
    if problems:   # recording would drop these tasks from the manifest: the mirror must match it first
        for task, why in problems.items():
            print(f"{task}: {why}", file=sys.stderr)
        sys.exit(f"cass bench-tasks: {len(problems)} tasks' files do not check against the mirror {mirror} "
                 "(another commit, or no mirror): fix benchmark.real.source, or run `cass bench-tasks build`")
    if args.tasks_command == "export":
        plan = plan_recording(store, params["execute"], tasks, placement)
        planned = plan.planned
        if args.missing_for:
            planned = not_recorded(store, planned, resolve_host(f"recorded:{args.missing_for}"))
        runs = write_batch(store, args.folder, planned, params["execute"])
        failed = sum(b.binary is None for b in plan.builds.values())
        print(f"{len({r.binary for r in planned})} binaries of {len(tasks)} tasks ({failed} builds failed), {runs} "
              f"runs in {args.folder}: python -m hosts.gpu run-batch on the GPU host, cass gpu-batch import, "
              "then cass bench-tasks record --name <host>")
        return 0
    host = resolve_host(f"recorded:{args.name}")
    try:
        kept, rows, left_out = record(store, params["execute"], tasks, host, placement)
    except ValueError as exc:
        sys.exit(f"cass bench-tasks record: {exc}")
    data = write_recorded(json.loads(MANIFEST.read_text()), kept, rows, left_out, {"name": host.name,
                                                                                   **asdict(host.host)})
    print(f"{len(kept)} tasks kept, {len(rows)} reference runs; left out: {data['left_out_by_reason']}")
    return 0


def own_references(args: argparse.Namespace, params: dict) -> int:
    """``cass bench-tasks export-own`` and ``record-own``: the own suite's references on its hidden arguments."""
    from cass.benchmark import task_references
    from cass.benchmark.tasks import load_tasks
    from cass.execution.batch import write_batch
    from cass.execution.hosts import resolve_host

    store, placement = open_store(params), Placement.of(params)
    root = Path(params["benchmark"]["tasks"])
    tasks = load_tasks(root)
    if args.tasks_command == "export-own":
        builds, planned = task_references.plan(store, params["execute"], tasks, placement)
        runs = write_batch(store, args.folder, {r for rs in planned.values() for r in rs}, params["execute"])
        print(f"{sum(b.binary is not None for b in builds.values())} of {len(builds)} programs built, {runs} runs in "
              f"{args.folder}: run them on a GPU host, cass gpu-batch import, then cass bench-tasks record-own")
        return 0
    problems = task_references.record(store, params["execute"], tasks, resolve_host(f"recorded:{args.name}"), root,
                                      placement)
    for task, why in sorted(problems.items()):
        print(f"{task}: {why}", file=sys.stderr)
    print(f"{sum(bool(t.hidden_args) for t in tasks.values()) - len(problems)} tasks recorded, {len(problems)} not")
    return 1 if problems else 0


def cmd_gpu_batch(args: argparse.Namespace) -> int:
    from cass.execution.batch import export_batch, import_results, merge_batches
    from cass.execution.hosts import resolve_host

    if args.batch_command == "merge":
        runs = merge_batches(args.folder, args.batches)
        print(f"{runs} runs of {len(args.batches)} batches in {args.folder}")
        return 0
    params = load_params()
    store = open_store(params)
    if args.batch_command == "export":
        recorded = resolve_host(f"recorded:{args.missing_for}") if args.missing_for else None
        done = export_batch(store, params, args.folder, recorded)
        print(f"{done['binaries']} binaries of {done['pairs']} pairs with a main ({done['build_failures']} builds "
              f"failed), {done['runs']} runs ({done['already_recorded']} recorded before), in {args.folder}. "
              "On the GPU host, in a checkout with blake3 "
              f"installed: python -m hosts.gpu run-batch {args.folder.name}; then copy the folder back and run "
              f"cass gpu-batch import {args.folder} --name <host>")
        return 0
    done = import_results(store, params["execute"], args.folder, args.name)
    print(f"{done['runs']} runs of {done['host']} recorded in the store; host facts in {done['recorded']}. "
          f"Set execute.host: recorded:{args.name} in params.yaml and run dvc repro.")
    if not done["limits_match_params"]:
        print("warning: the batch ran with other limits than params.yaml execute.limits; the execute stage keys "
              "runs by their limits and will not find these", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
