"""The translation benchmark: its tasks, the predictions reader, and the evaluator on real compilers (hipcc for
the compile rate, nvcc through HIP's NVIDIA back end) with programs run in the sandbox. Without a GPU the
verdicts that need none are asserted on a host-only task; the tasks' own programs need a GPU (marked)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO, TOOL_ENV, copy_pipeline, metrics, run_in
from harness.real_suite import MIRROR, UPSTREAM, recorded

from cass.benchmark.baselines import baseline
from cass.benchmark.evaluate import assembly_programs, compiles, evaluate, summarize, unbuilt
from cass.benchmark.real_tasks import build_manifest
from cass.benchmark.report import write_report
from cass.benchmark.tasks import TASKS_DIR, Prediction, PredictionsError, load_tasks, read_predictions
from cass.engine.targets import Build, finished
from cass.execution.hosts import ExecutionHost
from cass.pipeline.context import load_params
from hosts.gpu import cpu_host
from store import Store
from store.pack import read_pack
from toolchains.base import EXECUTABLE

pytestmark = pytest.mark.usefixtures("bubblewrap")

HOST_ONLY = """// Sums a fixed series on the host; the kernel is defined for the translation, never launched.
#include <cstdio>
#include <CUDA_HEADER>

__global__ void scale(float *v, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= a;
}

int main() {
    long long total = 0;
    for (int i = 1; i <= 1000; ++i) total += (long long)i * i % 97;
    BODY
    return 0;
}
"""


def program(header: str, body: str = 'printf("total %lld\\n", total);') -> str:
    return HOST_ONLY.replace("CUDA_HEADER", header).replace("BODY", body)


KINDS = ("right", "wrong", "does_not_compile", "hangs", "network", "asm_empty", "asm_right", "asm_renamed")


@pytest.fixture(scope="module")
def host_only_tasks(tmp_path_factory) -> Path:
    """Tasks whose program runs without a GPU (one per kind of prediction below, so that one evaluation
    holds them all): the CUDA text, the reference HIP and the reference stdout."""
    folder = tmp_path_factory.mktemp("tasks") / "testing"
    folder.mkdir()
    total = sum(i * i % 97 for i in range(1, 1001))
    for kind in ("sum", *KINDS):
        stem = folder / f"testing_{kind}"
        stem.with_suffix(".cu").write_text(program("cuda_runtime.h"))
        stem.with_suffix(".hip").write_text(program("hip/hip_runtime.h"))
        stem.with_suffix(".stdout").write_text(f"total {total}\n")
        stem.with_suffix(".yaml").write_text(f"id: testing_{kind}\ndomain: testing\ndifficulty: easy\n"
                                             "constructs: []\ndescription: a host-only sum.\n")
    return folder.parent


def test_the_benchmark_has_60_tasks_over_18_domains_with_references():
    tasks = load_tasks(REPO / TASKS_DIR)
    domains = {}
    for task in tasks.values():
        domains.setdefault(task.domain, []).append(task)
        assert task.reference_stdout.strip() and "hip_runtime" in task.reference_hip and "__global__" in task.cuda
        # a hidden seed that changes the answer, and the kernels of every recorded run on both sets (issue 48)
        assert task.arg_sets == ("visible", "hidden") and task.hidden_stdout != task.reference_stdout, task.id
        assert all(len(task.kernel_launches[s]) == 3 and min(task.kernel_launches[s]) > 0 for s in task.arg_sets)
    assert len(tasks) >= 60 and len(domains) >= 18 and min(map(len, domains.values())) >= 3


def test_a_malformed_predictions_file_names_the_line_and_the_cause(tmp_path, host_only_tasks):
    tasks = load_tasks(host_only_tasks)
    cases = {
        '{"task_id": "testing_sum", "task": "source", "prediction": "x"}\n{oops\n': ":2: not a JSON object",
        '{"task_id": "nope", "task": "source", "prediction": "x"}\n': "line 1: unknown task_id 'nope'",
        '{"task_id": "testing_sum", "task": "ptx", "prediction": "x"}\n': "task is 'ptx', not one of",
        '{"task_id": "testing_sum", "prediction": "x"}\n': "line 1: needs the keys",
        '{"task_id": "testing_sum", "task": "source", "extra": 1}\n': "line 1: needs the keys",
        '{"task_id": "testing_sum", "task": "source", "prediction": "a"}\n'
        '{"task_id": "testing_sum", "task": "source", "prediction": "b"}\n': "line 2: a second prediction",
    }
    for text, message in cases.items():
        path = tmp_path / "predictions.jsonl"
        path.write_text(text)
        with pytest.raises(PredictionsError, match=message.replace("(", r"\(")):
            read_predictions(path, tasks)
    proc = subprocess.run([sys.executable, "-m", "cass.cli", "eval", "--predictions", str(path), "--tasks",
                           str(host_only_tasks)], cwd=REPO, env=TOOL_ENV, capture_output=True, text=True)
    assert proc.returncode == 2 and "line 2: a second prediction" in proc.stderr



def test_the_cli_and_the_stage_run_programs_on_one_host_the_cli_option_first_then_the_benchmarks_then_executes():
    from cass.benchmark.scoring import run_host

    params = {"benchmark": {"host": None}, "execute": {"host": "cpu"},
              "executor": {"scheduler": None, "workers": 0, "host_wait_s": 0, "in_process_s": 0.5}}
    assert run_host(params).name == "cpu"
    params["benchmark"]["host"] = "none"   # the benchmark's own setting wins over execute.host
    assert run_host(params) is None
    assert run_host(params, "cpu").name == "cpu"   # cass eval --host wins over both


@pytest.mark.slow
def test_each_kind_of_prediction_gets_its_verdict_on_a_host_without_a_gpu(tmp_path, host_only_tasks, store,
                                                                          listener):
    tasks = load_tasks(host_only_tasks)
    params = load_params(REPO / "params.yaml")
    params["execute"]["limits"]["wall_s"] = 4
    hip = tasks["testing_sum"].reference_hip
    port = listener.getsockname()[1]
    network = ('int s = socket(AF_INET, SOCK_STREAM, 0); struct sockaddr_in a = {}; a.sin_family = AF_INET; '
               f'a.sin_port = htons({port}); a.sin_addr.s_addr = htonl(0x7f000001); '
               'printf("connect %d\\n", connect(s, (struct sockaddr *)&a, sizeof a));')
    texts = {
        "right": hip,
        "wrong": hip.replace("% 97", "% 89"),
        "does_not_compile": hip.replace("long long total = 0;", "long long total = ;"),
        "hangs": hip.replace("return 0;", "for (;;) sleep(1);").replace("#include <cstdio>",
                                                                         "#include <cstdio>\n#include <unistd.h>"),
        "network": hip.replace('printf("total %lld\\n", total);', network).replace(
            "#include <cstdio>", "#include <cstdio>\n#include <arpa/inet.h>\n#include <sys/socket.h>"),
    }
    predictions = tmp_path / "predictions.jsonl"
    lines = [{"task_id": f"testing_{kind}", "task": "source", "prediction": text} for kind, text in texts.items()]
    sum_task = {"testing_sum": tasks["testing_sum"]}
    reference_asm = next(p.prediction for p in baseline("reference", store, params, sum_task) if p.task == "asm")
    lines += [{"task_id": "testing_asm_empty", "task": "asm", "prediction": ""},
              {"task_id": "testing_asm_right", "task": "asm", "prediction": reference_asm},
              {"task_id": "testing_asm_renamed", "task": "asm", "prediction": reference_asm.replace("scale", "scalf")}]
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows, report = evaluate(store, params, tasks, read_predictions(predictions, tasks),
                            ExecutionHost("cpu", cpu_host(), live=True))
    with pytest.raises(TimeoutError):
        listener.accept()   # nothing reached the host's socket
    results = {(r["task_id"].removeprefix("testing_"), r["task"]): r for r in rows if not r["baseline_reference"]}
    assert {r["verdict"] for r in rows if r["baseline_reference"]} == {"pass"}   # the harness's own check
    right = results["right", "source"]
    assert right["verdict"] == "pass" and right["amd_compiles"] and right["runtime_ratio"] > 0
    assert right["peak_rss_mib"] > 0 and right["memory_ratio"] > 0   # the run's process tree, against the reference's
    assert results["wrong", "source"]["verdict"] == "wrong_output"
    assert results["wrong", "source"]["detail"].startswith("line 1: 'total ")
    assert results["does_not_compile", "source"]["verdict"] == "compile_failed"
    assert "expected expression" in results["does_not_compile", "source"]["detail"]
    assert results["hangs", "source"]["verdict"] == "timeout"
    assert results["network", "source"]["verdict"] == "wrong_output"
    assert "connect -1" in results["network", "source"]["detail"]
    empty = results["asm_empty", "asm"]
    assert (empty["verdict"], empty["amd_compiles"], empty["detail"]) == (
        "compile_failed", False, "assemble_failed: empty prediction")
    right = results["asm_right", "asm"]   # assembled, linked with the host code: a program, never run here
    assert (right["verdict"], right["amd_compiles"], right["detail"], right["chrf"]) == (
        "not_run:no_amd_host", True, "linked", 100.0)
    renamed = results["asm_renamed", "asm"]   # a valid code object, but the host code launches `scale`
    assert (renamed["verdict"], renamed["amd_compiles"]) == ("compile_failed", False)
    assert renamed["detail"].startswith("kernels_missing: linked, but no kernel")
    # 5 steps for each of the 3 (empty text assembles and links too, into a program without kernels)
    assert report["builds"]["assembly_programs"]["misses"] == 5 * 3

    summary = summarize(rows, tasks)
    write_report(tmp_path / "report", "mixed", rows, summary, report)
    written = json.loads((tmp_path / "report" / "report.json").read_text())
    assert written["summary"]["by_domain"]["testing"]["source"]["accuracy"] == 0.2   # 1 of 5
    assert written["summary"]["reference_check"] == {"pass": 8}   # every task with a prediction
    assert "| testing | 5 | 80.0% | 20.0% |" in (tmp_path / "report" / "report.md").read_text()
    assert (tmp_path / "report" / "accuracy.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_stopped_compile_is_no_verdict_and_without_a_run_host_no_program_is_built(tmp_path, host_only_tasks,
                                                                                     store):
    tasks = {"testing_sum": load_tasks(host_only_tasks)["testing_sum"]}
    params = load_params(REPO / "params.yaml")
    # the reference's device assembly, compiled in another store; in this one its program is built, not its compile
    reference_asm = next(p.prediction for p in baseline("reference", Store(tmp_path / "other"), params, tasks)
                         if p.task == "asm")
    assert assembly_programs(store, params, {"k": (reference_asm, tasks["testing_sum"].reference_hip)})[0]["k"].binary
    text = tasks["testing_sum"].reference_hip + "\n// a prediction of its own\n"
    predictions = [Prediction("testing_sum", "source", text), Prediction("testing_sum", "asm", reference_asm),
                   Prediction("testing_sum", "asm", reference_asm + "\n// another program\n"),
                   Prediction("testing_sum", "asm", "")]
    params["amd"]["timeout_s"] = params["hipify"]["timeout_s"] = 0.01   # every hipcc and hipify-perl is stopped
    rows, report = evaluate(store, params, tasks, predictions, None)
    source, built, unbuilt_asm, empty = (r for r in rows if not r["baseline_reference"])
    assert (source["verdict"], source["amd_compiles"]) == ("not_run:transient", None)   # not compile_failed
    assert source["detail"].startswith("hipcc stopped: timeout")
    assert (built["verdict"], built["amd_compiles"]) == ("not_run:transient", None)   # linked, but against what?
    assert built["detail"].startswith("the reference's hipcc stopped: timeout")
    assert (unbuilt_asm["verdict"], unbuilt_asm["amd_compiles"]) == ("not_run:transient", None)
    assert unbuilt_asm["detail"].startswith("the assembly program's build stopped: timeout")
    assert (empty["verdict"], empty["detail"]) == ("compile_failed", "assemble_failed: empty prediction")
    assert report["builds"]["amd"]["transient_failures"] > 0
    assert summarize(rows, tasks)["by_domain"]["testing"]["source"]["compile_rate"] is None   # unknown, not 0%
    with pytest.raises(RuntimeError, match="hipify-perl was stopped on 1 of 1 inputs"):   # a baseline's own input
        baseline("hipify-perl", store, params, tasks)
    params["amd"]["timeout_s"] = params["hipify"]["timeout_s"] = 600   # nothing of a stop was recorded
    rows, report = evaluate(store, params, tasks, predictions, None)
    source, built, unbuilt_asm, _ = (r for r in rows if not r["baseline_reference"])
    assert (source["verdict"], source["amd_compiles"]) == ("not_run:no_gpu_host", True)
    assert {built["verdict"], unbuilt_asm["verdict"]} == {"not_run:no_amd_host"}   # both linked now
    assert source["detail"].startswith("no run host: programs not built")   # nothing would run them
    assert report["builds"]["hip_nvidia"]["jobs_sent"] == 0 and not report["planned"]
    assert summarize(rows, tasks)["by_domain"]["testing"]["source"]["compile_rate"] == 1.0


def test_a_stop_is_no_verdict_wherever_it_happens_and_a_baselines_own_input_cannot_be_stopped():
    done, failed = Build("digest"), Build(None, "compile_error", "x.hip:1: error: expected ';'")
    stop = Build(None, "timeout", "device:gfx1100: timeout after 0.01 s")
    assert unbuilt(done, done) is None and unbuilt(done, None) is None
    assert unbuilt(failed, None) == ("compile_failed", "compile_error: x.hip:1: error: expected ';'")
    assert unbuilt(done, failed)[0] == "build_failed"
    assert unbuilt(stop, failed)[0] == unbuilt(done, stop)[0] == "not_run:transient"   # the first stop, either build
    assert unbuilt(done, stop)[1].startswith("the HIP-NVIDIA build stopped: timeout")
    assert (compiles(done), compiles(failed), compiles(stop)) == (True, False, None)
    assert finished({"a": done, "b": failed}, "hipify-perl") == {"a": done, "b": failed}
    with pytest.raises(RuntimeError, match=r"hipify-perl was stopped on 1 of 2 inputs \(timeout: device:gfx1100"):
        finished({"a": done, "b": stop}, "hipify-perl")


@pytest.mark.gpu
@pytest.mark.slow
def test_the_reference_passes_and_cheats_and_emptied_kernels_fail_on_a_gpu(tmp_path, store, gpu):
    """On a GPU: a task's reference prints its recorded output on the visible and the hidden arguments; the same
    translation with its first kernel emptied does not, nor a program that prints the visible answer and launches as
    many kernels as the CUDA program (the hidden seed tells it), nor one that prints the answer of each argument set
    and launches no kernel."""
    gpu.require()
    tasks = load_tasks(REPO / TASKS_DIR)
    task = tasks["finance_black_scholes_greeks"]
    assert task.arg_sets == ("visible", "hidden") and task.kernel_launches["visible"]
    count = task.kernel_launches["visible"][0]
    answer = ",".join(map(str, task.reference_stdout))
    cheat = ("#include <hip/hip_runtime.h>\n#include <cstdio>\n__global__ void token() {}\n"
             f"static const unsigned char answer[] = {{{answer}}};\n"
             f"int main() {{ for (int i = 0; i < {count}; ++i) hipLaunchKernelGGL(token, dim3(1), dim3(1), 0, 0);\n"
             "  hipDeviceSynchronize(); fwrite(answer, 1, sizeof answer, stdout); return 0; }\n")
    hidden = ",".join(map(str, task.hidden_stdout))
    host_only = ("#include <cstdio>\n"
                 f"static const unsigned char visible[] = {{{answer}}}, hidden[] = {{{hidden}}};\n"
                 "int main(int argc, char **) { if (argc > 1) fwrite(hidden, 1, sizeof hidden, stdout);\n"
                 "  else fwrite(visible, 1, sizeof visible, stdout); return 0; }\n")
    texts = {"emptied": task.reference_hip.replace("int i = blockIdx.x", "return;\n    int i = blockIdx.x", 1),
             "cheat": cheat, "host_only": host_only}
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"task_id": task.id, "task": "source", "prediction": text, "sample": n})
                                   + "\n" for n, text in enumerate(texts.values())))
    params = load_params(REPO / "params.yaml")
    read = read_predictions(predictions, {task.id: task})
    _, report = evaluate(store, params, {task.id: task}, read, None, build_programs=True)
    host = gpu.host(store, "benchmark", params, {r for rs in report["planned"].values() for r in rs})
    rows, _ = evaluate(store, params, {task.id: task}, read, host)
    verdicts = {("reference" if r["baseline_reference"] else list(texts)[r["sample"]]): r["verdict"] for r in rows}
    assert verdicts == {"reference": "pass", "emptied": "wrong_output", "cheat": "wrong_output",
                        "host_only": "no_kernel"}, rows


PIPELINE_TASKS = ("finance_black_scholes_greeks", "math_collatz_trajectories")
SMALL_PROGRAM = """// Scales a vector on the GPU and prints a checksum of the result.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *v, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * a + 1.0f;
}

int main() {
    const int n = 1 << 12;
    float host[n];
    for (int i = 0; i < n; ++i) host[i] = (float)(i % 17);
    float *dev;
    cudaMalloc(&dev, n * sizeof(float));
    cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice);
    scale<<<(n + 255) / 256, 256>>>(dev, 2.0f, n);
    cudaMemcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dev);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += host[i];
    printf("checksum %.1f\\n", sum);
    return 0;
}
"""


@pytest.fixture(scope="module")
def bench_project(tmp_path_factory) -> Path:
    """A pipeline copy whose corpus is two of the benchmark's tasks (origin bench), a training file and a
    training copy of one task with its comments changed, built with `dvc repro` (no run host), the train and generate
    stages on with the small random model."""
    root = copy_pipeline(tmp_path_factory.mktemp("bench") / "project", with_bundled_corpus=False,
                         bench_tasks=PIPELINE_TASKS)
    tasks = load_tasks(root / TASKS_DIR)
    (root / "corpus").mkdir()
    (root / "corpus" / "scale.cu").write_text(SMALL_PROGRAM)   # short examples: training stays cheap on a CPU
    copied = tasks["math_collatz_trajectories"].cuda.replace("//", "// copied from a tutorial:", 3)
    (root / "corpus" / "collatz_copy.cu").write_text(copied)
    # the real-program suite: the small mirror of tests/test_real_tasks.py, with a training copy of one of its programs
    real = root / "translation_bench" / "real"
    (real / "tasks.json").write_text(json.dumps(build_manifest(MIRROR, UPSTREAM)))
    recorded().write_parquet(real / "references.parquet")
    vecsum = (MIRROR / "src" / "vecsum-cuda" / "main.cu").read_text()
    (root / "corpus" / "vecsum_copy.cu").write_text(vecsum.replace("// Sums", "// From a forum post: sums"))
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["trees"] = [{"path": "corpus", "origin": "scraped"}, *params["corpus"]["trees"][1:]]
    params["execute"]["host"] = "none"
    params["benchmark"]["real"]["source"] = str(MIRROR)
    params["dedup"]["real_tasks"] = True   # decontaminated against the small mirror's suite
    # the loop with the tiny random model (trained 3 steps): every step runs, not its skill. Trained on the one
    # example within 1024 tokens (the source task's, 558): the two SASS examples (1,396 and 2,554 tokens) are left
    # out and counted, and a step over Qwen's 151,665-token vocabulary costs seconds per thousand tokens on a CPU.
    # Generation: the tasks' SASS prompts are longer than its 4096 tokens.
    params["train"].update(enabled=True, max_steps=3, save_steps=1, gradient_accumulation=1, max_length=1024)
    params["generate"].update(enabled=True, model="trained", max_new_tokens=8, max_prompt_tokens=4096)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro", "hub", "evaluate"], root)   # the figures, publishing and packs are not looked at
    return root


def hub_config(root: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(sorted((root / "data" / "hub" / "data" / name).glob("*.parquet")))


@pytest.mark.slow
def test_the_tasks_flow_through_the_pipeline_decontaminate_it_and_stay_out_of_training(bench_project):
    root = bench_project
    dedup = metrics(root, "dedup")
    assert dedup["dropped_by_origin"] == {"scraped:contaminated": 2} and dedup["kept"] == 3
    assert dedup["contaminated_by_suite"] == {"own": 1, "hecbench": 1}
    removed = pl.read_parquet(root / "data" / "dedup" / "removed.parquet").sort("path")
    assert removed["path"].to_list() == ["collatz_copy.cu", "vecsum_copy.cu"]
    assert "math/math_collatz_trajectories.cu" in removed["kept"][0]
    assert removed["kept"][1] == "reference hecbench:vecsum-cuda/main.cu"
    assert metrics(root, "real_tasks")["kept"] == 2 and hub_config(root, "benchmark_hecbench").height == 2
    paired = pl.read_parquet(root / "data" / "pair" / "manifest.parquet")
    assert sorted(paired.filter(pl.col("origin") == "bench")["path"]) == [
        "finance/finance_black_scholes_greeks.cu", "math/math_collatz_trajectories.cu"]   # both vendors' asm
    # every pair's HIP side also builds through HIP's NVIDIA back end, the platform its programs run on (this copy
    # keeps `pair.hip_nvidia` on; the other test copies leave it off)
    assert paired["hip_nvidia_build"].to_list() == ["ok"] * paired.height and paired["hip_nvidia_error"].is_null().all()
    assert metrics(root, "pair")["hip_nvidia"] == {"checked": paired.height, "ok": paired.height, "amd_only": {}}
    # the compile stages' toolchains stay, for the execute stage's builds (no fallback here)
    assert set(paired["nvidia_toolchain"]) == {"nvidia"} and set(paired["amd_toolchain"]) == {"amd"}
    instruct = metrics(root, "instruct")
    assert instruct["dropped_by_reason"]["benchmark_holdout"] >= 4   # both tasks, both levels at least
    for config in ("pairs", "kernels", "instruct_source", "instruct_asm"):
        assert "bench" not in hub_config(root, config)["origin"].to_list(), config
    assert hub_config(root, "pairs_bench").height == 2
    card = (root / "data" / "hub" / "README.md").read_text()
    assert "## Decontamination" in card and "`contaminated`: 2 in this build (1 near the own suite's tasks, 1 " \
        "near the real-program suite's)" in card


@pytest.mark.slow
def test_the_evaluate_stage_scores_the_baselines_on_the_pipelines_own_actions(bench_project):
    root = bench_project
    results = metrics(root, "evaluate")["own"]["results"]
    assert metrics(root, "evaluate")["own"]["tasks"] == 2
    reference, identity, hipify = results["reference"], results["identity"], results["hipify-perl"]
    assert reference["source"]["compile_rate"] == 1.0 and reference["asm"]["compile_rate"] == 1.0   # linked
    assert reference["asm"]["mean_chrf"] == 100.0
    assert identity["source"]["compile_rate"] == 0.0 and identity["asm"]["compile_rate"] == 0.0
    assert hipify["source"]["compile_rate"] == 1.0 and "asm" not in hipify
    for name, result in results.items():   # no run host: nothing passes, nothing is silently judged
        if name in ("reference", "hipify-perl"):   # the others do not compile
            assert result["source"]["verdicts"] == {"not_run:no_gpu_host": 2}
        assert result["reference_check"] == {"not_run:no_gpu_host": 2}
    report = json.loads((root / "data" / "evaluate" / "hipify-perl" / "report.json").read_text())
    # hipify-perl's translations are the pipeline's HIP texts (no repair needed): its hipcc compiles were made
    # by the compile_amd stage, under the same file names, and the evaluation found them in the store
    assert set(report) == {"name", "summary", "host", "predictions"}   # nothing of how this run went
    run_report = json.loads((root / "metrics" / "run" / "evaluate.json").read_text())
    builds = run_report["evaluations"]["own:hipify-perl"]["builds"]
    assert builds["amd"]["hits"] == 4 and builds["amd"]["misses"] == 0
    # the evaluation's actions (its compiles of both suites' baselines) go to the packs a collaborator pulls
    used = set(pl.read_parquet(root / "data" / "evaluate" / "actions.parquet")["key"])
    store = Store(root / ".cass" / "store")
    assert len(used) >= 4 + 2 * 4 and all(store.lookup(key) for key in used)
    run_in(["dvc", "repro", "pack_store"], root)
    entries = {(kind, name) for pack in (root / "data" / "store_packs").glob("*.pack")
               for kind, name, _ in read_pack(pack)}
    builds = {key for key in used if EXECUTABLE in store.lookup(key).outputs}
    assert builds and {("A", key) for key in used - builds} <= entries   # every compile and run: packed
    assert not {("A", key) for key in builds} & entries   # the builds and their executables: not
    assert not {("O", store.lookup(key).outputs[EXECUTABLE]) for key in builds} & entries
    generated = metrics(root, "generate")
    assert generated["predictions"] == 4 and generated["model"]["backend"] == "transformers"
    assert "source:prompt_too_long" not in generated["extracted"]   # the tasks' CUDA programs fit 4096 tokens
    assert generated["extracted"]["asm:prompt_too_long"] >= 1       # a whole program's SASS seldom does
    model = results["model"]   # the generate stage's predictions, scored like any other (8 random tokens: no program)
    assert model["source"]["n"] == model["asm"]["n"] == 2
    assert model["source"]["verdicts"] == {"compile_failed": 2} and model["asm"]["compile_rate"] == 0.0
    real = metrics(root, "evaluate")["hecbench"]   # the real-program suite: its four baselines, compile rates only
    assert real["tasks"] == 2 and set(real["results"]) == {"reference", "identity", "hipify-perl", "pipeline"}
    assert real["results"]["reference"]["source"]["compile_rate"] == 1.0
    assert real["results"]["identity"]["source"]["compile_rate"] == 0.0
    assert real["results"]["pipeline"]["source"]["verdicts"] == {"not_run:no_gpu_host": 2}
    assert (root / "data" / "evaluate" / "hecbench" / "pipeline" / "report.md").is_file()
    assert "evaluate" not in run_in(["dvc", "status"], root)   # an unchanged rerun evaluates nothing


@pytest.mark.slow
def test_the_loop_trains_then_generates_with_the_trained_model_and_an_unchanged_rerun_does_neither(bench_project):
    from cass.models.backends import directory_digest

    root = bench_project
    trained = metrics(root, "train")
    assert trained["steps"] == 3 and trained["method"] == "full"
    assert trained["examples"] == 1 and trained["examples_over_max_length"] == 2
    log = pl.read_csv(root / "data" / "train" / "log.csv")
    assert log["step"].to_list() == [1, 2, 3] and log["loss"].is_finite().all()   # the curve `dvc plots` draws
    generated = metrics(root, "generate")
    assert generated["model"]["weights"] == directory_digest(root / "data" / "train" / "model")
    assert "model" in metrics(root, "evaluate")["own"]["results"]
    status = run_in(["dvc", "status"], root)
    assert "train" not in status and "generate" not in status


def test_the_committed_build_pairs_every_benchmark_task():
    # metrics/yield.json as the bundled build committed it (dvc.lock holds its hash): every task a pair
    tasks = len(load_tasks(REPO / "translation_bench" / "tasks"))
    bench = metrics(REPO, "yield")["corpora"]["bench"]
    assert tasks == 60 and bench["files"] == bench["nvidia_ok"] == bench["both"] == tasks
