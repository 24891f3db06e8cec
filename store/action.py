"""The one schema of an action, and the one function that keys it (as Bazel's remote-apis key an ``Action`` message).

Every cached result in the store is the record of an action: a vendor's tool run, a program run on a GPU host, a
model completion, a blob fetched, a configure step, a notebook run, or one of the library's own pure functions
(repairs, MinHash signatures, memos). Each is described by the same fields, and its key is derived from them alone,
by :func:`action_key`; nothing else builds a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from store.cas import SCHEMA_VERSION, canonical_json, digest_bytes


@dataclass(frozen=True)
class ActionSpec:
    """What an action is, all its key is made of.

    ``vendor``: where the tool comes from (a vendor's toolchain, ``gpu`` for a run host, ``model`` for a language
    model, ``cass`` for the library's own functions); ``tool``: its name; ``toolchain``: its identity (a toolchain's
    or a host's fingerprint, a model's identity, a function's version: what changes its results); ``args``: its
    argument vector; ``inputs``: its inputs by name, each a digest; ``outputs``: the outputs it keeps, ``stdout_as``
    the one its standard output becomes; ``env``: the settings of its environment that change what it makes (JSON
    values; left out of the key when there are none)."""

    vendor: str
    tool: str
    toolchain: Any
    args: tuple[str, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()
    outputs: tuple[str, ...] = ()
    stdout_as: str | None = None
    env: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        pairs = self.inputs.items() if isinstance(self.inputs, Mapping) else self.inputs
        object.__setattr__(self, "inputs", tuple(sorted((str(n), str(d)) for n, d in pairs)))
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if len({name for name, _ in self.inputs}) < len(self.inputs):
            raise ValueError(f"action {self.vendor}:{self.tool}: two inputs share a name: {self.inputs}")

    def __hash__(self) -> int:   # its fields may hold mappings: the key stands for them
        return hash(self.key)

    @cached_property
    def key(self) -> str:
        """The action's key (:func:`action_key`)."""
        return action_key(self)


def action_key(action: ActionSpec) -> str:
    """BLAKE3 of the action's canonical description and the store's schema version. A tool run without ``env`` is
    described as the tool actions were before the schema (the same keys: no compile is redone for it)."""
    description: dict[str, Any] = {
        "vendor": action.vendor, "tool": action.tool, "args": list(action.args), "outputs": list(action.outputs),
        "stdout_as": action.stdout_as, "toolchain": action.toolchain, "inputs": [list(p) for p in action.inputs]}
    if action.env:
        description["env"] = dict(action.env)
    return digest_bytes(canonical_json({"schema": SCHEMA_VERSION, "action": description}))

