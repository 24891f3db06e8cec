"""The target model's tokenizer, loaded through ``transformers.AutoTokenizer``.

``tokens.tokenizer`` names it (a Hub id such as the Qwen2.5-Coder tokenizer the paper fine-tuned,
or a local directory). Where it cannot be loaded (these machines cannot reach the Hub) and
``tokens.offline_fallback`` is true, a byte-level BPE tokenizer is trained on the corpus with
the ``tokenizers`` library, saved as a transformers tokenizer directory and loaded through the
same ``AutoTokenizer`` call; which one was used is recorded in the metrics.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML, the format of the Qwen2.5 chat models."""


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
    fast.chat_template = CHAT_TEMPLATE
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out_dir))
    return out_dir


def load_tokenizer(params: dict, corpus: Iterable[str], fallback_dir: Path) -> tuple[PreTrainedTokenizerBase, str]:
    """(tokenizer, what it is): the named one, else the corpus-trained fallback if allowed."""
    name = params["tokenizer"]
    try:
        return AutoTokenizer.from_pretrained(name), name
    except (OSError, ValueError) as exc:
        if not params["offline_fallback"]:
            raise SystemExit(f"tokens: cannot load tokenizer {name!r} ({exc}); set tokens.tokenizer to a local "
                             "directory or allow tokens.offline_fallback") from exc
        print(f"tokens: tokenizer {name!r} unavailable ({type(exc).__name__}); using a BPE tokenizer trained "
              f"on the corpus ({fallback_dir})", file=sys.stderr)
    build_corpus_tokenizer(corpus, fallback_dir, params["fallback_vocab_size"])
    return AutoTokenizer.from_pretrained(str(fallback_dir)), f"corpus BPE fallback ({params['fallback_vocab_size']})"


def count_tokens(tokenizer: PreTrainedTokenizerBase, texts: list[str], batch_size: int) -> list[int]:
    """Tokens per text (no special tokens), computed in batches."""
    counts: list[int] = []
    for start in range(0, len(texts), batch_size):
        encoded = tokenizer(texts[start:start + batch_size], add_special_tokens=False)["input_ids"]
        counts.extend(len(ids) for ids in encoded)
    return counts
