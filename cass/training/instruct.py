"""Training examples as chat messages in the CASS prompt formats (stage ``instruct``: :mod:`cass.stages.instruct`)."""

from __future__ import annotations

import polars as pl

from cass.training.prompts import TASKS

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
SCHEMA = {"id": pl.String, "level": pl.String, "sample_id": pl.String, "kernel": pl.String, "origin": pl.String,
          "path": pl.String, "domain": pl.String, "messages": MESSAGES}
IDENTITY = "identity_translation"
HOLDOUT = "benchmark_holdout"
TEXTS = {"source": (0, 1), "asm": (2, 3)}
"""Which of a unit's texts (CUDA source, HIP source, SASS, AMD asm) each task turns into messages."""


def same_text(prompt: str, answer: str) -> bool:
    """Whether two texts differ only in whitespace."""
    return prompt.split() == answer.split()


def dataset_info() -> dict:
    """LLaMA-Factory's declaration of the configs (sharegpt format with OpenAI-style messages)."""
    tags = {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant"}
    return {f"cass_{t.name}": {"file_name": t.name, "formatting": "sharegpt", "columns": {"messages": "messages"},
                               "tags": tags} for t in TASKS}
