"""The translation benchmark: its tasks, the predictions reader, and the evaluator on real compilers (hipcc for
the compile rate, nvcc through HIP's NVIDIA back end) with programs run in the sandbox. Without a GPU the
verdicts that need none are asserted on a host-only task; the tasks' own programs need a GPU (marked)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from harness.project import REPO, TOOL_ENV

from cass.benchmark.evaluate import evaluate, summarize
from cass.benchmark.report import write_report
from cass.benchmark.tasks import TASKS_DIR, PredictionsError, load_tasks, read_predictions
from cass.execution.hosts import ExecutionHost, resolve_host
from cass.pipeline.context import load_params
from toolchains.gpu import cpu_host

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


KINDS = ("right", "wrong", "does_not_compile", "hangs", "network", "asm_empty")


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
    lines.append({"task_id": "testing_asm_empty", "task": "asm", "prediction": ""})
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows, report = evaluate(store, params, tasks, read_predictions(predictions, tasks),
                            ExecutionHost("cpu", cpu_host(), live=True))
    with pytest.raises(TimeoutError):
        listener.accept()   # nothing reached the host's socket
    results = {(r["task_id"].removeprefix("testing_"), r["task"]): r for r in rows if not r["baseline_reference"]}
    assert {r["verdict"] for r in rows if r["baseline_reference"]} == {"pass"}   # the harness's own check
    right = results["right", "source"]
    assert right["verdict"] == "pass" and right["amd_compiles"] and right["runtime_ratio"] > 0
    assert results["wrong", "source"]["verdict"] == "wrong_output"
    assert results["wrong", "source"]["detail"].startswith("line 1: 'total ")
    assert results["does_not_compile", "source"]["verdict"] == "compile_failed"
    assert "expected expression" in results["does_not_compile", "source"]["detail"]
    assert results["hangs", "source"]["verdict"] == "timeout"
    assert results["network", "source"]["verdict"] == "wrong_output"
    assert "connect -1" in results["network", "source"]["detail"]
    empty = results["asm_empty", "asm"]
    assert (empty["verdict"], empty["amd_compiles"], empty["detail"]) == (
        "not_run:no_amd_host", False, "assemble_failed: empty prediction")

    summary = summarize(rows, tasks)
    write_report(tmp_path / "report", "mixed", rows, summary, report)
    written = json.loads((tmp_path / "report" / "report.json").read_text())
    assert written["summary"]["by_domain"]["testing"]["source"]["accuracy"] == 0.2   # 1 of 5
    assert written["summary"]["reference_check"] == {"pass": 6}   # every task with a prediction
    assert "| testing | 5 | 80.0% | 20.0% |" in (tmp_path / "report" / "report.md").read_text()
    assert (tmp_path / "report" / "accuracy.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.gpu
@pytest.mark.slow
def test_the_reference_passes_and_emptied_kernels_fail_on_this_machines_gpu(tmp_path, store):
    """Where a GPU is: a task's reference prints its recorded output, and the same translation with its first
    kernel emptied does not."""
    host = resolve_host("auto")
    if host is None:
        pytest.skip("no NVIDIA GPU on this machine (nvidia-smi finds none)")
    tasks = load_tasks(REPO / TASKS_DIR)
    task = tasks["finance_black_scholes_greeks"]
    emptied = task.reference_hip.replace("int i = blockIdx.x", "return;\n    int i = blockIdx.x", 1)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"task_id": task.id, "task": "source", "prediction": emptied}))
    rows, _ = evaluate(store, load_params(REPO / "params.yaml"), tasks, read_predictions(predictions, tasks), host)
    verdicts = {r["baseline_reference"]: r["verdict"] for r in rows}
    assert verdicts == {True: "pass", False: "wrong_output"}
