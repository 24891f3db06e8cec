"""``tiny-qwen2``: a small Qwen2 causal LM with random weights, built offline from a config and the Qwen2.5
tokenizer (:mod:`cass.training.qwen`), so that the model loop runs end to end where no weights can be downloaded.
The same config and seed give the same weights, so the built directory (and its digest) is the same on every
machine."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import blake3

from cass.training import qwen

NAME = "tiny-qwen2"


def build(config: dict, seed: int, cache: Path) -> Path:
    """The model directory for ``config`` (Qwen2Config fields) and ``seed``, built once under ``cache``."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    spec = json.dumps({"config": config, "seed": seed, "torch": torch.__version__}, sort_keys=True)
    out = cache / f"{NAME}-{blake3.blake3(spec.encode()).hexdigest()[:16]}"
    if (out / "config.json").is_file():
        return out
    tokenizer = AutoTokenizer.from_pretrained(str(qwen.build(cache.parent / "tokenizers")))
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), **config,
                                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                                         pad_token_id=tokenizer.pad_token_id))
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{out.name}.", dir=cache))
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    try:
        partial.rename(out)   # whole or absent: a killed build leaves no half model behind
    except OSError:   # another process built it meanwhile (same config, same weights)
        shutil.rmtree(partial)
    return out
