"""The one schema of an action, and the one function that keys it (as Bazel's remote-apis key an ``Action`` message).

Every cached result in the store is the record of an action: a vendor's tool run, a program run on a GPU host, a
model completion, a blob fetched, a configure step, a notebook run, or one of the library's own pure functions
(repairs, MinHash signatures, memos). Each is described by the same fields, and its key is derived from them alone,
by :func:`action_key`; nothing else builds a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store.cas import SCHEMA_VERSION, canonical_json, digest_bytes


@dataclass(frozen=True, eq=False)
class ActionSpec:
    """What an action is, all its key is made of.

    ``vendor``: where the tool comes from (a vendor's toolchain, ``gpu`` for a run host, ``model`` for a language
    model, ``s3`` for a bucket, ``cass`` for the library's own functions and steps); ``tool``: its name;
    ``toolchain``: its identity (a toolchain's or a host's fingerprint, a model's identity, a function's version or
    settings: what changes its results); ``args``: its argument vector; ``inputs``: its inputs by name, each a digest
    (of a store object, or of what the action reads from elsewhere: a prompt, a tree, a table); ``outputs``: the
    outputs it keeps, ``stdout_as`` the one its standard output becomes; ``env``: the settings of its environment
    that change what it makes (JSON values; left out of the key when there are none). The key is taken when the
    action is made (:func:`action_key`), and two actions are equal when their keys are."""

    vendor: str
    tool: str
    toolchain: Any
    args: tuple[str, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()
    outputs: tuple[str, ...] = ()
    stdout_as: str | None = None
    env: Mapping[str, Any] = field(default_factory=dict)
    key: str = field(init=False, repr=False)
    """The action's key (:func:`action_key`)."""

    def __post_init__(self) -> None:
        pairs = list(self.inputs.items() if isinstance(self.inputs, Mapping) else self.inputs)
        if bad := [(n, d) for n, d in pairs if not (isinstance(n, str) and isinstance(d, str) and d)]:
            raise ValueError(f"action {self.vendor}:{self.tool}: an input is a name and a digest, not {bad[0]!r}")
        if len({name for name, _ in pairs}) < len(pairs):
            raise ValueError(f"action {self.vendor}:{self.tool}: two inputs share a name: {sorted(pairs)}")
        for name in ("args", "outputs"):
            if isinstance(getattr(self, name), str):
                raise ValueError(f"action {self.vendor}:{self.tool}: {name} is a sequence of strings, not a string")
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "inputs", tuple(sorted(pairs)))
        object.__setattr__(self, "key", action_key(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSpec) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def action_key(action: ActionSpec) -> str:
    """BLAKE3 of the action's canonical description and the store's schema version. A tool run without ``env`` is
    described as the tool actions were before the schema (the same keys: no compile is redone for it)."""
    description: dict[str, Any] = {
        "vendor": action.vendor, "tool": action.tool, "args": list(action.args), "outputs": list(action.outputs),
        "stdout_as": action.stdout_as, "toolchain": action.toolchain, "inputs": [list(p) for p in action.inputs]}
    if action.env:
        description["env"] = dict(action.env)
    return digest_bytes(canonical_json({"schema": SCHEMA_VERSION, "action": description}))

