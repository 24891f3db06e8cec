"""The synthesize stage: the paper's templates drawn by seed and mix, requests through the OpenAI protocol to
in-test servers (a tiny random Qwen2 for the plumbing: caching, resume after kill -9, extraction, counts per reason;
a scripted server whose known CUDA programs must flow through the real compilers to pairs)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import TOOL_ENV, copy_pipeline, metrics, run_in, run_report
from openai_standin import ModelServer, ScriptedServer

from cass.dedup.minhash import MinHashParams, content_key, signatures
from cass.models import tiny
from cass.models.backends import local_model
from cass.pipeline.context import load_params
from cass.sources.synthetic import TEMPLATES_FILE, Templates, draw_prompts, duplicates, placeholders_of
from store import Store

PROGRAMS = Path(__file__).parent / "fixtures" / "synthetic"
TABLE_5 = {   # the paper's Table 5: example values of some placeholders
    "size": ["64", "1024", "16384"], "optimization": ["memory coalescing", "shared memory usage",
                                                     "warp-level programming"],
    "graph_format": ["adjacency matrix", "CSR", "edge list"], "hash_algorithm": ["SHA-256", "BLAKE3", "Bcrypt"],
    "collision_strategy": ["linear probing", "cuckoo hashing", "separate chaining"],
}


@pytest.fixture(scope="module")
def templates() -> Templates:
    return Templates.load(TEMPLATES_FILE)


def even_mix(templates: Templates) -> tuple[dict, dict]:
    return {c: 1 for c in templates.categories}, {p: 1 for p in templates.personas}


def test_the_templates_are_the_papers_fifty_in_ten_categories_with_widened_values(templates):
    assert len(templates.categories) == 10 and {len(t) for t in templates.categories.values()} == {5}
    used = {p for text in templates.templates.values() for p in placeholders_of(text)}
    assert used == set(templates.placeholders) and len(used) >= 29   # every placeholder filled, none unused
    for name, examples in TABLE_5.items():
        assert templates.placeholders[name][:3] == examples and len(templates.placeholders[name]) > 3
    assert all(len(values) >= 5 for values in templates.placeholders.values())


def test_a_placeholder_without_values_is_refused_naming_the_template(tmp_path):
    bad = yaml.safe_load(TEMPLATES_FILE.read_text())
    del bad["placeholders"]["radius"]
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ValueError, match=r"basic_operations/stencil uses \['radius'\]"):
        Templates.load(tmp_path / "t.yaml")


def test_draws_follow_the_seed_and_the_mix(templates):
    categories, personas = even_mix(templates)
    many = draw_prompts(templates, 300, 7, categories, personas)
    assert many[:40] == draw_prompts(templates, 40, 7, categories, personas)   # more programs keep the first ones
    assert many != draw_prompts(templates, 300, 8, categories, personas)
    assert len({d.template_id for d in many}) >= 45 and len({d.persona for d in many}) == 5
    assert all("{" not in d.task and d.messages[1]["content"].startswith(d.task) for d in many)
    assert all(d.messages[0]["content"] == templates.personas[d.persona] for d in many)
    skewed = draw_prompts(templates, 300, 7, {"graph_algorithms": 3, "simulation": 1}, {"educator": 1})
    counts = Counter(d.template_id.split("/")[0] for d in skewed)
    assert set(counts) == {"graph_algorithms", "simulation"} and counts["graph_algorithms"] > 2 * counts["simulation"]
    assert {d.persona for d in skewed} == {"educator"}
    with pytest.raises(ValueError, match="names \\['graphs'\\]"):
        draw_prompts(templates, 1, 0, {"graphs": 1}, personas)


def test_exact_and_near_duplicates_point_at_the_first_of_their_kind():
    params = MinHashParams(ngram=3, num_perm=128, seed=1, threshold=0.6)   # one word in 20 changed: about 0.71
    base = "Write a CUDA kernel for parallel reduction to compute the sum of an array of size 1024 quickly and well"
    texts = [base, "Implement a hash table with cuckoo hashing on the GPU for many keys", base,
             base.replace("quickly", "rapidly")]
    found = duplicates(texts, params, str)
    assert found[2][:2] == ("duplicate", 0) and found[3][:2] == ("near_duplicate", 0) and set(found) == {2, 3}
    code = ["__global__ void k(int *a) { a[0] = 1; }", "__global__  void k(int*a){a[0]=1;} // same"]
    assert duplicates(code, params, content_key)[1][:2] == ("duplicate", 0)   # tokens, not bytes


def test_a_draws_fate_in_prompt_dedup_does_not_depend_on_the_draws_after_it(templates):
    params = load_params()["synthesize"]
    mh = MinHashParams(params["prompt_dedup"]["ngram"], 256, 1, params["prompt_dedup"]["threshold"])
    texts = [f"{d.messages[0]['content']}\n{d.task}" for d in draw_prompts(templates, 3000, 0, *even_mix(templates))]
    every = duplicates(texts, mh, str)
    first = duplicates(texts[:300], mh, str)
    assert first == {i: found for i, found in every.items() if i < 300} and first
    assert all(texts[i] != texts[j] or kind == "duplicate" for i, (kind, j, _) in every.items())

    sigs, kept, exact, near = signatures(texts[:1000], mh), [], set(), set()   # first wins, every pair compared
    for i, text in enumerate(texts[:1000]):
        if text in texts[:i]:
            exact.add(i)
        elif kept and max((sigs[kept] == sigs[i]).mean(axis=1)) >= mh.threshold:
            near.add(i)
        else:
            kept.append(i)
    found = {i: kind for i, (kind, _, _) in every.items() if i < 1000}
    assert {i for i, kind in found.items() if kind == "duplicate"} == exact
    lsh_near = {i for i, kind in found.items() if kind == "near_duplicate"}
    assert len(lsh_near & near) >= 0.9 * len(near) and len(near) > 30   # LSH banding misses few
    assert all(float(detail.split()[-1]) >= mh.threshold for kind, _, detail in every.values() if kind != "duplicate")


# ----------------------------------------------------------------- the stage, against in-test servers


def synthetic_project(root: Path, base_url: str, **synthesize) -> Path:
    """A copy of the pipeline whose only source is the synthesize stage, pointed at ``base_url``."""
    copy_pipeline(root, with_bundled_corpus=False, hip_nvidia_check=False)
    (root / "corpus").mkdir()
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["trees"] = []
    params["synthesize"].update(enabled=True, backend="openai", base_url=base_url, model="standin", revision="r1",
                                max_new_tokens=24, retries=1, timeout_s=60, **synthesize)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


def point_at(root: Path, base_url: str) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["synthesize"]["base_url"] = base_url
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def requests_table(root: Path) -> pl.DataFrame:
    return pl.read_parquet(root / "data" / "synthesize" / "requests.parquet").sort("draw")


@pytest.fixture(scope="module")
def model_dir():
    return local_model(tiny.NAME, load_params()["tiny_model"])


@pytest.mark.slow
def test_a_tiny_model_run_killed_midway_resumes_and_a_rerun_asks_nothing(tmp_path, model_dir):
    with ModelServer(model_dir, delay_s=0.5) as server:
        root = synthetic_project(tmp_path / "project", server.base_url, programs=10, concurrency=1)
        stage = subprocess.Popen([sys.executable, "-m", "stages.synthesize"], cwd=root, env=TOOL_ENV,
                                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while server.answered < 3 and time.monotonic() < deadline and stage.poll() is None:
            time.sleep(0.05)
        os.killpg(stage.pid, signal.SIGKILL)
        stage.wait()
        assert server.answered >= 3, "the stage did not get three answers before the deadline"
        time.sleep(1)   # a request already on the wire reaches the server's count
        asked_before = server.requests

        run_in(["dvc", "repro", "synthesize"], root)
        sent = run_report(root, "synthesize")["requests"]
        assert sent["hits"] >= 2   # what the killed run finished (all but at most the one in flight)
        assert sent["hits"] + sent["generated"] == sent["asked"] and sent["failed"] == 0
        assert server.requests - asked_before == sent["generated"]

        found = metrics(root, "synthesize")
        table = requests_table(root)
        assert found["in"] == table.height == 10 and found["kept"] + found["dropped"] == 10
        assert dict(Counter(table.filter(pl.col("status") != "kept")["status"])) == found["dropped_by_reason"]
        answered = table.filter(pl.col("completion").is_not_null())
        assert answered.height == sent["asked"] and sum(found["extracted"].values()) == sent["asked"]
        assert found["tokens"]["answered"] == sent["asked"] and found["tokens"]["completion_mean"] > 0
        assert json.loads(table["model"][0]) == {"backend": "openai", "model": "standin", "revision": "r1"}
        store = Store(root / ".cass" / "store")
        for row in answered.iter_rows(named=True):   # the random model's answer, as it came back
            assert isinstance(store.get_text(row["completion"]), str)
            assert json.loads(row["variables"]).keys() == set(placeholders_of(
                Templates.load(TEMPLATES_FILE).templates[row["template_id"]]))
        before = table.drop("detail")

        run_in(["dvc", "repro", "-f", "synthesize"], root)   # everything from the store
        again = run_report(root, "synthesize")["requests"]
        assert server.requests - asked_before == sent["generated"] and again["generated"] == 0
        assert requests_table(root).drop("detail").equals(before)


def scripted_answers(draws) -> dict[str, str]:
    """Per task of the first eight draws: four known programs (the fourth in a ``cpp`` fence among prose), the first
    again with other comments and spacing, a kernel without main, prose only; the eighth is refused."""
    programs = [(PROGRAMS / name).read_text() for name in ("histogram.cu", "stencil.cu", "matmul.cu")]
    respaced = "// the same program\n" + programs[0].replace("    ", "\t").replace("int main() {", "int main()\n{")
    texts = [f"```cuda\n{p}```" for p in programs]
    texts += [f"Here is the program.\n\n```cpp\n{(PROGRAMS / 'block_scan.cu').read_text()}```\n\nIt scans blocks.",
              f"Again:\n```cuda\n{respaced}```",
              "```cuda\n__global__ void scale(float *x, float s, int n) {\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= s;\n}\n```",
              "I would write a kernel that sorts the keys, but I cannot see the data."]
    return {d.task: text for d, text in zip(draws, texts, strict=False)}


EXPECTED_STATUS = ["kept"] * 4 + ["duplicate_output", "no_main", "no_kernel", "request_failed"]


@pytest.mark.slow
def test_known_programs_from_a_scripted_server_become_pairs_and_every_draw_is_accounted_for(tmp_path, toolchains):
    params = load_params()["synthesize"]
    draws = draw_prompts(Templates.load(TEMPLATES_FILE), 8, params["seed"], params["categories"],
                         params["personas"])
    assert len({d.task for d in draws}) == 8
    answers = scripted_answers(draws)

    def script(request: dict) -> str:
        return answers[request["messages"][1]["content"].split("\n\n")[0]]

    with ScriptedServer(script, refuse_marker=draws[7].task) as server:
        root = synthetic_project(tmp_path / "project", server.base_url, programs=8, concurrency=3)
        run_in(["dvc", "repro", "yield_report", "hub", "analyze", "pack_store"], root)
        assert server.requests == 8
        table = requests_table(root)
        assert table["status"].to_list() == EXPECTED_STATUS
        assert table["extracted"].to_list()[:7] == ["answer_fence"] * 3 + ["first_fence", "answer_fence",
                                                                           "answer_fence", "no_fence"]
        assert "HTTP 400" in table["detail"][7] and f"as {draws[0].path}" in table["detail"][4]

        pairs = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
        kept = [d.path for d in draws[:4]]
        assert sorted(pairs["path"]) == sorted(kept) and set(pairs["origin"]) == {"synthetic"}
        assert all(pairs["cuda_device_sass_sm_89"].str.contains("Function : ")) and all(
            pairs["hip_device_asm_gfx1100"].str.contains(".amdhsa_kernel"))
        assert set(pairs["repository"]) == {"openai:standin"} and set(pairs["license_type"]) == {"model_output"}
        by_template = metrics(root, "yield")["synthetic_templates"]
        assert sum(t["both"] for t in by_template.values()) == 4 and sum(t["drawn"] for t in by_template.values()) == 8
        assert sum(t["answered"] for t in by_template.values()) == 7
        assert "| all | 8 | 7 | 4 | 4 | 4 | 4 | 57.1% |" in (root / "data" / "yield_report" / "yield.md").read_text()
        assert (root / "data" / "hub" / "data" / "pairs_synthetic").is_dir()
        figures = json.loads((root / "analysis" / "metrics.json").read_text())
        assert figures["composition"]["origins"] == figures["lengths"]["origins"] == ["synthetic"]

        # the completions are the stage's actions: gc keeps them, and the packs carry them to a store without them
        run_in(["cass", "store", "gc"], root)
        run_in(["dvc", "repro", "-f", "synthesize"], root)   # only the refused request is asked again
        assert server.requests == 9 and run_report(root, "synthesize")["requests"]["hits"] == 7
        shutil.rmtree(root / ".cass" / "store")
        run_in(["dvc", "repro", "-f", "synthesize"], root)
        assert server.requests == 10 and run_report(root, "synthesize")["requests"]["hits"] == 7


@pytest.mark.slow
def test_a_server_that_is_gone_or_wrong_stops_the_run_with_the_address_and_writes_no_manifest(tmp_path):
    def synthesize(root: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "stages.synthesize"], cwd=root, env=TOOL_ENV,
                              capture_output=True, text=True, check=False)

    with ScriptedServer(lambda request: "") as server:
        base_url = server.base_url
        wrong = synthetic_project(tmp_path / "wrong", base_url.replace("/v1", "/v2"), programs=3, concurrency=1)
        proc = synthesize(wrong)   # every request answered 404: not one prompt's fault
        assert proc.returncode != 0 and "HTTP 404" in proc.stderr and "/v2" in proc.stderr
        assert server.requests == 1 and not (wrong / "data" / "synthesize" / "manifest.parquet").exists()   # no more
    root = synthetic_project(tmp_path / "project", base_url, programs=3, concurrency=1)
    proc = synthesize(root)
    assert proc.returncode != 0 and base_url in proc.stderr and "run again to resume" in proc.stderr
    assert not (root / "data" / "synthesize" / "manifest.parquet").exists()
