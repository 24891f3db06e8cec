"""Models in the loop, on the CPU: the small random Qwen2 built offline, completions for the benchmark's prompts as
cached actions (an unchanged run generates nothing, an interrupted one resumes), code taken from the answer's
fence, and the OpenAI-protocol backend against an in-test server that runs the same model."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from harness.project import REPO
from openai_standin import ModelServer

from cass.benchmark.generate import generate
from cass.benchmark.tasks import TASKS_DIR, load_tasks
from cass.models import tiny
from cass.models.backends import OpenAIBackend, Sampling, TransformersBackend, directory_digest, local_model
from cass.models.completions import extract
from cass.pipeline.context import load_params

TWO = ("finance_black_scholes_greeks", "math_collatz_trajectories")


@pytest.fixture(scope="module")
def params() -> dict:
    params = load_params(REPO / "params.yaml")
    params["generate"].update(tasks=["source"], max_new_tokens=8, batch_size=2)
    return params


@pytest.fixture(scope="module")
def tasks() -> dict:
    every = load_tasks(REPO / TASKS_DIR)
    return {t: every[t] for t in TWO}


@pytest.fixture(scope="module")
def model_dir(params):
    return local_model(tiny.NAME, params["tiny_model"])


def test_the_tiny_model_is_built_offline_and_the_same_from_the_same_config(model_dir, params, tmp_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(model_dir))
    assert config.model_type == "qwen2" and config.vocab_size == 151665   # the Qwen2.5 vocabulary with its specials
    again = tiny.build(params["tiny_model"]["config"], params["tiny_model"]["seed"], tmp_path)
    assert again != model_dir and directory_digest(again) == directory_digest(model_dir)


def test_an_unchanged_run_generates_nothing_and_a_changed_parameter_generates_again(store, params, tasks, model_dir):
    backend = TransformersBackend(model_dir, batch_size=2)
    rows, facts = generate(store, params, tasks, backend)
    assert [(r["task_id"], r["task"], r["sample"]) for r in rows] == [(t, "source", 0) for t in TWO]
    assert facts["report"]["generated"] == 2 and facts["model"]["weights"] == directory_digest(model_dir)
    again, facts = generate(store, params, tasks, backend)
    assert again == rows and (facts["report"]["generated"], facts["report"]["hits"]) == (0, 2)
    longer = copy.deepcopy(params)
    longer["generate"]["max_new_tokens"] = 9
    _, facts = generate(store, longer, tasks, backend)
    assert (facts["report"]["generated"], facts["report"]["hits"]) == (2, 0)


def test_an_interrupted_run_keeps_what_it_finished(store, params, tasks, model_dir):
    class Interrupted(TransformersBackend):   # the run dies right after its first completion
        def complete(self, prompts, sampling, sample, done):
            super().complete(prompts[:1], sampling, sample, done)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate(store, params, tasks, Interrupted(model_dir, batch_size=2))   # the batch size keys completions too
    _, facts = generate(store, params, tasks, TransformersBackend(model_dir, batch_size=2))
    assert (facts["report"]["generated"], facts["report"]["hits"]) == (1, 1)


def test_code_comes_from_the_answers_fence():
    assert extract("Sure:\n```amd\n__global__ void k() {}\n```\nDone.", "amd") == ("__global__ void k() {}",
                                                                                    "answer_fence")
    assert extract("```cpp\nint x;\n```", "amd") == ("int x;", "first_fence")
    assert extract("```amd\nint x;", "amd") == ("int x;", "answer_fence")   # cut off by max_new_tokens
    assert extract("  no fence  ", "amd") == ("no fence", "no_fence")


def test_greedy_samples_are_refused():
    with pytest.raises(ValueError, match="temperature > 0"):
        Sampling(temperature=0.0, top_p=1.0, max_new_tokens=8, samples=4, seed=0)


@pytest.mark.slow
def test_the_openai_backend_gets_the_models_own_answers_and_retries_a_failing_server(store, params, tasks, model_dir):
    local, _ = generate(store, params, tasks, TransformersBackend(model_dir, batch_size=2))
    with ModelServer(model_dir, fail_first=2) as server:
        http = OpenAIBackend(server.base_url, "tiny", revision="r1", concurrency=1, retries=3, timeout_s=60)
        one = {TWO[0]: tasks[TWO[0]]}
        rows, facts = generate(store, params, one, http)
        assert server.requests == 3   # two 500s, then the answer
        assert rows[0]["prediction"] == local[0]["prediction"] != ""   # the same model, greedy: the same text
        assert facts["model"] == {"backend": "openai", "model": "tiny", "revision": "r1"}
        rows, facts = generate(store, params, tasks, OpenAIBackend(server.base_url, "tiny", "r1", 2, 3, 60))
        assert server.requests == 4 and (facts["report"]["generated"], facts["report"]["hits"]) == (1, 1)
        assert [r["prediction"] for r in rows] == [r["prediction"] for r in local]


INSTRUCT = Path("data", "instruct")
"""The instruct stage's folder, relative to the project the fixture below makes the working directory"""


@pytest.fixture
def instruct_shards(tmp_path, monkeypatch):
    """A project folder whose instruct config ``source`` holds six small examples (the messages format)."""
    import polars as pl

    from cass.training.prompts import SOURCE

    monkeypatch.chdir(tmp_path)
    rows = [{"messages": SOURCE.messages(f"__global__ void k{i}(float *x) {{ x[{i}] *= 2.0f; }}",
                                         f"__global__ void k{i}(float *x) {{ x[{i}] = x[{i}] * 2.0f; }}")}
            for i in range(6)]
    (tmp_path / "data" / "instruct" / "source").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(tmp_path / "data" / "instruct" / "source" / "train-00000-of-00001.parquet")
    return tmp_path


@pytest.mark.slow
def test_a_killed_training_run_resumes_from_its_last_checkpoint(params, instruct_shards):
    from transformers import TrainerCallback

    from cass.models.train import train

    class Killed(TrainerCallback):   # dies at step 2, after step 1's checkpoint
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt

    settings = {**params["train"], "tasks": ["source"], "max_steps": 3, "save_steps": 1, "gradient_accumulation": 1,
                "max_length": 256, "learning_rate": 1e-3}
    with pytest.raises(KeyboardInterrupt):
        train(settings, params["tiny_model"], INSTRUCT, instruct_shards / "model", callbacks=[Killed()])
    class Steps(TrainerCallback):   # the steps this process runs
        def __init__(self):
            self.ran = []

        def on_step_end(self, args, state, control, **kwargs):
            self.ran.append(state.global_step)

    resumed, fresh = Steps(), Steps()
    facts = train(settings, params["tiny_model"], INSTRUCT, instruct_shards / "model", callbacks=[resumed])
    assert facts["resumed"] and facts["steps"] == 3 and resumed.ran == [2, 3]   # step 1 from its checkpoint
    assert [step for step, _, _ in facts["log"]] == [1, 2, 3] and (instruct_shards / "model" / "config.json").is_file()
    other = train({**settings, "learning_rate": 2e-3}, params["tiny_model"], INSTRUCT, instruct_shards / "other",
                  callbacks=[fresh])
    assert not other["resumed"] and fresh.ran == [1, 2, 3]   # other parameters: another run, from scratch
    assert other["tokens_per_s"] > 0   # TRL's count of the tokens trained on
