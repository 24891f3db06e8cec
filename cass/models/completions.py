"""Completions of chat prompts as cached actions of the store, shared by the stages that ask a model (``generate``,
``synthesize``): each is keyed by the model's identity (:mod:`cass.models.backends`), the messages, the sampling
parameters and the sample's number, and recorded as soon as it is made, so a killed run resumes where it stopped and
an unchanged run asks nothing; and code taken from a completion's fence."""

from __future__ import annotations

import re
import threading
from collections import Counter

from tqdm import tqdm

from cass.engine.cached import CachedMap
from cass.models.backends import Backend, Messages, Sampling
from store import ActionSpec, Store, canonical_json, digest_bytes

COMPLETION_TOOL = "generate"
"""The tool name in every completion key (the stage that first made them): the same request is the same action,
whichever stage asks."""
GENERATOR_VERSION = 1
"""Changes when the way completions are made changes (prompt layout, decoding): it enters every key."""
FENCE = re.compile(r"```([^\n`]*)\n(.*?)(?:```|\Z)", re.DOTALL)


def completion_action(identity: dict, messages: Messages, sampling: Sampling, sample: int) -> ActionSpec:
    """Sample ``sample`` of a model's completion of ``messages`` (the prompt by the digest of its canonical JSON)."""
    drawn = {k: v for k, v in sampling.describe().items() if k != "samples"}   # one more sample keeps the others
    return ActionSpec("model", COMPLETION_TOOL, {"generator": GENERATOR_VERSION, "model": identity},
                      inputs={"messages": digest_bytes(canonical_json(messages))}, outputs=("completion",),
                      env={"sampling": drawn, "sample": sample})


def complete_all(store: Store, backend: Backend, asked: dict[tuple[str, str], Messages], sampling: Sampling,
                 label: str) -> tuple[dict[tuple[str, str, int], str], Counter, dict[tuple[str, str, int], str]]:
    """Every sample of every prompt: from the store, the others made by ``backend`` and recorded one by one (a
    progress bar named ``label``); and why each prompt the backend refused failed (not recorded: a later run asks
    again)."""
    texts: dict[tuple[str, str, int], str] = {}
    failed: dict[tuple[str, str, int], str] = {}
    cache = CachedMap(store)
    lock = threading.Lock()   # the HTTP backend finishes completions on its threads
    for sample in range(sampling.samples):
        actions = {k: completion_action(backend.identity, m, sampling, sample) for k, m in asked.items()}
        found, missing = cache.split(actions)
        texts.update({(*k, sample): store.get_text(r.outputs["completion"]) for k, r in found.items()})
        if not missing:
            continue
        bar = tqdm(total=len(missing), desc=f"{label} sample {sample + 1}/{sampling.samples}", unit="prompt")

        def done(index: int, text: str, missing=missing, actions=actions, sample=sample, bar=bar) -> None:
            k = missing[index]
            cache.record(actions[k], {"completion": text.encode()})
            with lock:
                texts[(*k, sample)] = text
                bar.update()

        errors = backend.complete([asked[k] for k in missing], sampling, sample, done)
        bar.close()
        failed.update({(*missing[i], sample): error for i, error in errors.items()})
    return texts, Counter(hits=cache.hits, generated=cache.misses), failed


def extract(text: str, fence: str) -> tuple[str, str]:
    """(code, how) from a completion: the block fenced as ``fence``, else the first fenced block, else the text."""
    blocks = FENCE.findall(text)
    for language, body in blocks:
        if language.strip() == fence:
            return body.strip("\n"), "answer_fence"
    if blocks:
        return blocks[0][1].strip("\n"), "first_fence"
    return text.strip(), "no_fence"
