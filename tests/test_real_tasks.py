"""The real-program suite: tasks made from a mirror (a small one written for these tests, laid out as HeCBench is,
and the development copy in ../shared where it is), checked by digest, and judged so that printing the answer
does not pass: on the hidden arguments, with a kernel counted in every run."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import polars as pl
import pytest
from harness.project import REPO
from harness.real_suite import HIDDEN_OUTPUT, MIRROR, UPSTREAM, VISIBLE_OUTPUT, recorded

from cass.benchmark.baselines import choose_for, first_differing
from cass.benchmark.real_evaluate import arg_sets, evaluate_real, reference_runs, verdict_of
from cass.benchmark.real_programs import REFERENCES
from cass.benchmark.real_tasks import MANIFEST, build_manifest, hidden_arguments, load_files, read_manifest
from cass.benchmark.tasks import PredictionsError, read_predictions
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import Run
from cass.execution.verify import MATCHES
from cass.pipeline.context import load_params
from hosts.gpu import cpu_host


@pytest.fixture(scope="module")
def manifest() -> dict:
    return build_manifest(MIRROR, UPSTREAM)


def tasks_of(manifest: dict) -> dict:
    from cass.benchmark.real_tasks import RealTask
    return {t["id"]: RealTask(**t) for t in manifest["tasks"]}


def test_hidden_arguments_halve_whole_numbers_and_keep_the_rest():
    assert hidden_arguments(["4096", "10"]) == ["2048", "5"]
    assert hidden_arguments(["-n=100", "--iterations=3", "data/in.txt", "0.5", "1", "-v"]) == \
        ["-n=50", "--iterations=1", "data/in.txt", "0.5", "1", "-v"]
    assert hidden_arguments([]) == []


def test_the_mutant_baseline_takes_the_first_mutant_shown_to_behave_otherwise_on_the_selection_arguments(
        manifest, store):
    """A mutant that prints what the human port prints (its timings aside) on arguments no verdict uses is not shown
    to be wrong, and the ``mutant`` baseline passes it over: one that changes a value by its last digit, a device
    read, the kernel count, or that crashes, is taken; a candidate not yet run stops the choice."""
    task = tasks_of(manifest)["hecbench_vecsum"]
    assert task.arguments("selection") == ["1024", "2"] and task.arguments("hidden") == ["2048", "5"]

    def run(output: bytes, kernels: int = 5, code: int = 0, reads: bytes | None = None) -> Run:
        return Run("exited", code, store.put(output), store.put(b"boom\n"), 0.1, 1000, kernels, ("1024", "2"),
                   store.put(reads) if reads else None)

    copy = b"device-reads 1 copies 1 pending 0\n4 daa66d2c7ddf743f 1 9.8090892502737195e-45 0 0 0\n"
    port = [run(b"sum 1234.5\ntime 3.1 ms\n", reads=copy), run(b"sum 1234.5\ntime 2.9 ms\n", reads=copy),
            run(b"sum 1234.5\ntime 3.4 ms\n", reads=copy)]
    same = run(b"sum 1234.5\ntime 9.9 ms\n", reads=copy)
    assert first_differing(store, port, [same, run(b"sum 1234.51\ntime 3 ms\n", reads=copy)], True) == 1
    assert first_differing(store, port, [same, run(b"sum 1234.5\ntime 3 ms\n", reads=copy.replace(b"daa", b"dab"))],
                           True) == 1
    assert first_differing(store, port, [run(b"sum 1234.5\ntime 3 ms\n", kernels=4, reads=copy)], True) == 0
    assert first_differing(store, port, [run(b"", code=139)], True) == 0
    assert first_differing(store, port, [same, None, run(b"sum 1\n")], True).endswith("not recorded: candidate 2")
    assert first_differing(store, port, [same, same], True).endswith("on the selection arguments: 2 candidates")
    silent = [run(b"PASS\n"), run(b"PASS\n"), run(b"PASS\n")]   # nothing computed shown, no device read recorded
    assert first_differing(store, silent, [run(b"PASS\n")], True).endswith("arguments: 1 candidates")

    # per task, nothing is chosen where the port cannot show a difference; every such task keeps its reason
    differing = [same, run(b"sum 1234.51\ntime 3 ms\n", reads=copy)]
    assert choose_for(store, task, port, differing) == 1
    assert choose_for(store, task, port, []) == "no mutant of the human port builds to another program"
    assert choose_for(store, task, None, differing) == "the human port does not build"
    assert choose_for(store, task, [*port[:2], None], differing) == "the human port's selection runs are not recorded"
    assert choose_for(store, task, [*port[:2], run(b"", code=1)], differing).startswith(
        "the human port fails on the selection arguments: run 3: exited, exit 1: boom")
    assert choose_for(store, task, [run(b"sum 1234.5\n", kernels=0)] * 3, differing) == \
        "the human port launches no kernel on the selection arguments"
    judged_only = replace(task, visible_args=["1", "x"], hidden_args=["1", "x"])   # halving changes nothing
    assert choose_for(store, judged_only, port, differing) == "no selection arguments apart from the judged ones"


def test_each_benchmark_with_a_port_is_a_task_or_is_left_out_with_the_reason(manifest):
    tasks = tasks_of(manifest)
    assert sorted(tasks) == ["hecbench_twounits", "hecbench_vecsum"]   # cudaonly has no port: not a candidate
    assert manifest["left_out"] == [{"benchmark": "needsdata", "reason": "needs_input",
                                     "detail": "the run reads needsdata-cuda/data/input.txt, which the mirror does "
                                               "not have (or over 16 MiB; 1 in all)"}]
    vecsum = tasks["hecbench_vecsum"]
    assert (vecsum.visible_args, vecsum.hidden_args, vecsum.hidden_differs) == (["4096", "10"], ["2048", "5"], True)
    assert (vecsum.domain, vecsum.license, vecsum.license_file) == ("math", "Expat", "vecsum-cuda/LICENSE")
    assert vecsum.run_spec_source == "vecsum-cuda/Makefile:run" and vecsum.workdir == "vecsum-cuda"
    assert "atomics" in vecsum.constructs and vecsum.difficulty == "easy"
    assert vecsum.human_from == {"vecsum-cuda/main.cu": "vecsum-hip/main.cu"}
    two = tasks["hecbench_twounits"]
    assert two.units == ["twounits-cuda/kernel.cu"]   # from the Makefile's source list
    assert set(two.files) == {"twounits-cuda/main.cu", "twounits-cuda/kernel.h", "twounits-cuda/kernel.cu"}
    # the port has no kernel.h: it takes the CUDA folder's, as upstream builds it (-I../twounits-cuda)
    assert set(two.human) == {"twounits-cuda/main.cu", "twounits-cuda/kernel.cu"}
    assert set(two.overlay(two.human)) == set(two.files)
    assert two.overlay(two.human)["twounits-cuda/kernel.h"] == two.files["twounits-cuda/kernel.h"]


def test_files_are_read_by_digest_and_a_changed_or_missing_mirror_names_the_file(manifest, tmp_path, store):
    tasks = list(tasks_of(manifest).values())
    ok, problems = load_files(store, MIRROR, tasks)
    assert len(ok) == 2 and problems == {}
    vecsum = next(t for t in ok if t.benchmark == "vecsum")
    assert store.get(vecsum.human["vecsum-cuda/main.cu"]) == (MIRROR / "src" / "vecsum-hip" / "main.cu").read_bytes()
    changed = tmp_path / "mirror"
    shutil.copytree(MIRROR, changed)
    with (changed / "src" / "vecsum-hip" / "main.cu").open("a") as f:
        f.write("// another commit\n")
    (changed / "src" / "twounits-cuda" / "kernel.h").unlink()
    ok, problems = load_files(store, changed, tasks)
    assert ok == []
    assert "vecsum-hip/main.cu: BLAKE3" in problems["hecbench_vecsum"]
    assert "another upstream commit" in problems["hecbench_vecsum"]
    assert problems["hecbench_twounits"].endswith("twounits-cuda/kernel.h: No such file or directory")


def test_predictions_of_a_real_task_are_a_text_or_files_of_its_folder(manifest, tmp_path):
    tasks = tasks_of(manifest)
    path = tmp_path / "p.jsonl"
    rows = [{"task_id": "hecbench_vecsum", "task": "source", "prediction": "int main() {}"},
            {"task_id": "hecbench_twounits", "task": "source",
             "prediction": {"twounits-cuda/kernel.cu": "x", "twounits-cuda/extra.h": "y"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = read_predictions(path, tasks)
    assert read[1].prediction == {"twounits-cuda/kernel.cu": "x", "twounits-cuda/extra.h": "y"}
    path.write_text(json.dumps({"task_id": "hecbench_vecsum", "task": "source",
                                "prediction": {"vecsum-hip/main.cu": "x"}}) + "\n")
    with pytest.raises(PredictionsError, match=r"line 1: vecsum-hip/main\.cu is neither a file of task hecbench_vec"):
        read_predictions(path, tasks)


def test_a_pass_needs_both_outputs_and_as_many_kernels_as_the_cuda_original(manifest, store):
    task = tasks_of(manifest)["hecbench_vecsum"]
    references = {s: reference_runs(store, recorded(), task, s) for s in arg_sets(task)}
    assert [r.args for r in references["hidden"]] == [("2048", "5")] * 3   # the hidden arguments, thrice

    def run(output: bytes, kernels: int | None, args: tuple[str, ...]) -> Run:
        return Run("exited", 0, store.put(output), store.put(b""), 0.1, 1000, kernels, args)

    def verdict(hidden: bytes, kernels: int | None, visible: bytes = VISIBLE_OUTPUT, visible_kernels: int = 10) -> str:
        runs = {"visible": [run(visible, visible_kernels, ("4096", "10"))], "hidden": [run(hidden, kernels,
                                                                                         ("2048", "5"))]}
        return verdict_of(store, task, references, runs, {"rtol": 1e-5, "atol": 1e-8})[0]
    assert verdict(HIDDEN_OUTPUT, 5) == "pass"                     # a translation that does the work
    assert verdict(VISIBLE_OUTPUT, 5) == "wrong_output"            # the answer the prompt's arguments give
    assert verdict(VISIBLE_OUTPUT, 10) == "wrong_output"           # that answer and the visible kernel count
    assert verdict(HIDDEN_OUTPUT, 5, visible=HIDDEN_OUTPUT) == "wrong_output"   # the hidden answer, printed always
    assert verdict(HIDDEN_OUTPUT, 1) == "kernel_count_differs"     # the answer printed, a token kernel launched
    assert verdict(HIDDEN_OUTPUT, 5, visible_kernels=1) == "kernel_count_differs"
    assert verdict(HIDDEN_OUTPUT, 0) == "no_kernel"                # the answer computed on the CPU
    assert verdict(HIDDEN_OUTPUT, None) == "no_kernel"             # kernels not counted: never a pass
    assert verdict(b"", 5) == "wrong_output"
    varying = recorded().with_columns(kernel_launches=pl.Series([10, 10, 10, 5, 7, 6] + [1] * 6))
    references = {s: reference_runs(store, varying, task, s) for s in arg_sets(task)}   # the original's count varies
    assert verdict(HIDDEN_OUTPUT, 8) == "pass"                     # within 5 to 7 widened by their spread
    assert verdict(HIDDEN_OUTPUT, 1) == "kernel_count_differs" and verdict(HIDDEN_OUTPUT, 0) == "no_kernel"


@pytest.mark.slow
@pytest.mark.usefixtures("bubblewrap")
def test_printing_the_visible_answer_or_computing_it_on_the_cpu_does_not_pass(manifest, store):
    tasks = tasks_of(manifest)
    load_files(store, MIRROR, list(tasks.values()))
    task = {"hecbench_vecsum": tasks["hecbench_vecsum"]}
    from cass.benchmark.tasks import Prediction
    prints_visible = '#include <cstdio>\nint main() { printf("%s", "' + VISIBLE_OUTPUT.decode().replace(
        "\n", "\\n") + '"); return 0; }\n'
    on_the_cpu = ('#include <cstdio>\n#include <cstdlib>\nint main(int argc, char **argv) {\n'
                  '  long long n = atoi(argv[1]), sum = 0;\n  for (long long i = 0; i < n; i++) sum += 3 * i;\n'
                  '  printf("n %lld sum %lld\\n%s\\n", n, sum, "PASS");\n  return 0;\n}\n')
    predictions = [Prediction("hecbench_vecsum", "source", prints_visible),
                   Prediction("hecbench_vecsum", "source", on_the_cpu, 1)]
    rows, _ = evaluate_real(store, load_params(REPO / "params.yaml"), task, recorded(),
                                 predictions, ExecutionHost("cpu", cpu_host(), live=True))
    by_sample = {r["sample"]: r for r in rows if not r["baseline_reference"]}
    assert by_sample[0]["amd_compiles"] and by_sample[1]["amd_compiles"]
    # the hidden arguments print another sum: the visible answer is a wrong output
    assert by_sample[0]["verdict"] == "wrong_output"
    assert by_sample[0]["detail"] == "hidden arguments: line 1: 'n 2048 sum 6288384' | 'n 4096 sum 25159680'"
    # the right output for the hidden arguments, but no kernel counted on the GPU
    assert by_sample[1]["verdict"] == "no_kernel" and "[None]" in by_sample[1]["detail"]
    human = next(r for r in rows if r["baseline_reference"])   # needs a GPU: here its cudaMalloc fails, sum 0
    assert human["amd_compiles"] and human["verdict"] == "wrong_output" and "sum 0'" in human["detail"]


@pytest.mark.skipif(not (REPO.parent / "shared" / "hecbench").is_dir(), reason="no HeCBench copy in ../shared")
def test_the_committed_suite_is_the_development_copy_and_its_references_verify_the_human_port(store):
    _, tasks = read_manifest(MANIFEST)
    manifest = json.loads(MANIFEST.read_text())
    ok, problems = load_files(store, REPO.parent / "shared" / "hecbench", tasks)
    assert problems == {} and len(ok) == len(tasks)
    references = pl.read_parquet(REFERENCES)
    assert set(references["task_id"]) == {t.id for t in tasks}
    for task in tasks:   # both argument sets recorded three times; the human port verified on both
        sets = references.filter(pl.col("task_id") == task.id)
        assert task.hidden_differs and (task.hidden_output_differs or task.hidden_kernels_differ), task.id
        assert sets.height == 3 * 2, task.id
        assert all(s.split(";")[0] in MATCHES for s in task.references.values()), task.id
        assert (sets["kernel_launches"] > 0).all() and (sets["exit_code"] == 0).all(), task.id
    assert manifest["references_host"]["launch_counter"]   # kernels were counted where they were recorded
    left = {x["benchmark"] for x in manifest["left_out"]}
    assert not left & {t.benchmark for t in tasks}
