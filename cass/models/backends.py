"""Where completions come from, behind one interface: a local model run with transformers, or a server that speaks
the OpenAI-compatible chat API (vLLM, SGLang, llama.cpp, Ollama). Each backend names its model's identity, which
keys every cached completion: the digest of a local model's files, or the server's model name plus a revision."""

from __future__ import annotations

import os
import shutil
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

import blake3

from cass.models import tiny
from cass.pipeline.manifests import DATA_DIR
from cass.pipeline.metrics import write_metrics
from store.machine_cache import machine_cache

TRAINED = "trained"
TRAINED_MODEL = DATA_DIR / "train" / "model"
"""Where the train stage puts its model: ``generate.model: trained`` names it."""


@dataclass(frozen=True)
class Sampling:
    """How completions are drawn: greedy where ``temperature`` is 0; ``samples`` per prompt (pass@k)."""

    temperature: float
    top_p: float
    max_new_tokens: int
    samples: int
    seed: int

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"generate.samples is {self.samples}: draw at least one sample")
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("generate.samples > 1 needs generate.temperature > 0: greedy samples are all the same")

    def describe(self) -> dict:
        return asdict(self)


Messages = list[dict[str, str]]


class BackendUnavailable(RuntimeError):
    """The model cannot answer (a server unreachable, failing or refusing every request): the run stops."""


REFUSED_ALONE = (400, 413, 422)
"""HTTP statuses that refuse one request (a prompt over the context, a malformed message), not the server."""


class Backend(ABC):
    """Completions for chat prompts."""

    @property
    @abstractmethod
    def identity(self) -> dict:
        """What a completion depends on besides its prompt and sampling: enters every cache key."""

    @abstractmethod
    def complete(self, prompts: list[Messages], sampling: Sampling, sample: int,
                 done: Callable[[int, str], None]) -> dict[int, str]:
        """Sample number ``sample`` of every prompt; ``done(index, text)`` as each finishes (so a killed run keeps
        what it finished). Returns why each prompt the model refused failed, by index (the others go on); raises
        :class:`BackendUnavailable` when the model cannot answer at all."""

    def prompt_tokens(self, messages: Messages) -> int | None:
        """The prompt's length in the model's tokens, where this side knows the tokenizer (else None: the server
        enforces its own context)."""
        return None


def directory_digest(path: Path) -> str:
    """BLAKE3 over a model directory's files (names and bytes, in name order)."""
    h = blake3.blake3()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        with f.open("rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()


class TransformersBackend(Backend):
    """A local causal LM (a model directory) run with transformers, in batches with left padding."""

    def __init__(self, path: Path, batch_size: int):
        self.path = path
        self.batch_size = batch_size
        self._digest = directory_digest(path)
        self._loaded = None

    @property
    def identity(self) -> dict:
        """The weights, and what changes greedy output beside them: the device (kernels) and the batch (padding)."""
        import torch

        return {"backend": "transformers", "weights": self._digest, "batch_size": self.batch_size,
                "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"}

    @cached_property
    def tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self.path), padding_side="left")

    def prompt_tokens(self, messages: Messages) -> int:
        return len(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)[
            "input_ids"])

    def _load(self):
        if self._loaded is None:
            import torch
            from transformers import AutoModelForCausalLM

            tokenizer = self.tokenizer
            device = "cuda" if torch.cuda.is_available() else "cpu"
            model = AutoModelForCausalLM.from_pretrained(str(self.path), dtype="auto").to(device).eval()
            self._loaded = (tokenizer, model, device)
        return self._loaded

    def complete(self, prompts: list[Messages], sampling: Sampling, sample: int,
                 done: Callable[[int, str], None]) -> dict[int, str]:
        import torch

        tokenizer, model, device = self._load()
        for start in range(0, len(prompts), self.batch_size):
            batch = prompts[start:start + self.batch_size]
            texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in batch]
            inputs = tokenizer(texts, return_tensors="pt", padding=True).to(device)
            torch.manual_seed(sampling.seed + sample)
            greedy = sampling.temperature == 0
            options = {"do_sample": False} if greedy else {"do_sample": True, "temperature": sampling.temperature,
                                                           "top_p": sampling.top_p}
            with torch.no_grad():
                out = model.generate(**inputs, max_new_tokens=sampling.max_new_tokens,
                                     pad_token_id=tokenizer.pad_token_id, **options)
            for i, row in enumerate(out[:, inputs["input_ids"].shape[1]:]):
                done(start + i, tokenizer.decode(row, skip_special_tokens=True))
        return {}


class OpenAIBackend(Backend):
    """A server of the OpenAI-compatible chat API, through the ``openai`` client: ``concurrency`` requests at once,
    each retried with exponential backoff on connection errors, timeouts, 408/409/429 and 5xx. A request refused
    with 400, 413 or 422 (a prompt over the context, say) fails alone; any other failure after the retries (the
    server unreachable or overloaded, a request timing out, 401/403/404: a wrong key or model name) stops the run,
    without starting the requests still queued."""

    def __init__(self, base_url: str, model: str, revision: str | None, concurrency: int, retries: int,
                 timeout_s: float):
        from openai import OpenAI

        self.model, self.revision, self.concurrency = model, revision, concurrency
        self.client = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "none"),
                             max_retries=retries, timeout=timeout_s)

    @property
    def identity(self) -> dict:
        return {"backend": "openai", "model": self.model, "revision": self.revision}

    def complete(self, prompts: list[Messages], sampling: Sampling, sample: int,
                 done: Callable[[int, str], None]) -> dict[int, str]:
        import openai

        stopping = threading.Event()   # set by the first request that stops the run: the queued ones skip

        def one(index: int) -> str | None:
            if stopping.is_set():
                return None
            try:
                reply = self.client.chat.completions.create(
                    model=self.model, messages=prompts[index], temperature=sampling.temperature,
                    top_p=sampling.top_p, max_tokens=sampling.max_new_tokens, seed=sampling.seed + sample)
            except openai.APIStatusError as exc:
                if exc.status_code in REFUSED_ALONE:
                    return f"HTTP {exc.status_code}: {exc.message}"[:2000]
                stopping.set()
                raise BackendUnavailable(f"{self.client.base_url} (model {self.model!r}): HTTP {exc.status_code}: "
                                         f"{exc.message}") from exc
            except openai.APIError as exc:   # connection errors and timeouts, after the retries
                stopping.set()
                raise BackendUnavailable(f"{self.client.base_url}: {type(exc).__name__}: {exc} (after "
                                         f"{self.client.max_retries} retries)") from exc
            done(index, reply.choices[0].message.content or "")
            return None

        pool = ThreadPoolExecutor(self.concurrency)
        try:
            futures = {pool.submit(one, i): i for i in range(len(prompts))}
            return {futures[f]: error for f in as_completed(futures) if (error := f.result()) is not None}
        finally:   # after a failure, what has not started does not start: the next run asks for it
            pool.shutdown(cancel_futures=True)


def start_optional_stage(name: str, out_dir: Path, enabled: bool) -> bool:
    """Empty ``out_dir`` (a DVC output) for this run; where the stage is off, say so in its metrics and return False."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    if not enabled:
        write_metrics(name, {"enabled": False})
        print(f"{name}: off ({name}.enabled: false)")
    return enabled


def model_cache() -> Path:
    """Where models built here are kept: ``$CASS_CACHE/models`` or ``~/.cache/cass/models``."""
    return machine_cache("models")


def local_model(name: str, tiny_model: dict) -> Path:
    """A model directory: ``tiny-qwen2`` (built from ``tiny_model``'s config and seed), ``trained`` (the train
    stage's model), else the path itself."""
    if name == tiny.NAME:
        return tiny.build(tiny_model["config"], tiny_model["seed"], model_cache())
    if name == TRAINED:
        if not (TRAINED_MODEL / "config.json").is_file():
            raise FileNotFoundError(f"model {TRAINED!r}: no {TRAINED_MODEL}; turn the train stage on (train.enabled)")
        return TRAINED_MODEL
    path = Path(name)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"model {name!r}: not a model directory (no config.json) and not {tiny.NAME!r}")
    return path


def load_backend(params: dict, tiny_model: dict) -> Backend:
    """The backend ``generate`` in params.yaml names (``tiny_model``: how ``tiny-qwen2`` is built)."""
    if params["backend"] == "transformers":
        return TransformersBackend(local_model(params["model"], tiny_model), params["batch_size"])
    if params["backend"] == "openai":
        return OpenAIBackend(params["base_url"], params["model"], params["revision"], params["concurrency"],
                             params["retries"], params["timeout_s"])
    raise ValueError(f"generate.backend is {params['backend']!r}: choose transformers or openai")
