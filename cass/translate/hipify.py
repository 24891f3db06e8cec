"""hipify-perl on every CUDA file, as cached actions, and its default mode's warnings rebuilt (stage ``hipify``:
:mod:`cass.stages.hipify`)."""

from __future__ import annotations

from cass.engine.actions import Action, plan
from cass.translate.hipify_warnings import (
    WarningCheck,
    WarningTables,
    map_line_numbers,
    translated_text_warnings,
    warning_check,
)

FileKey = tuple[str, str]
"""(path, digest) of a CUDA file: one translation per distinct pair."""


def plan_files(store, amd, tables: WarningTables, files: set[FileKey]) -> tuple[dict, dict]:
    """Per file: its translation action, and (where some line can warn) the lines to check and
    the action checking them."""
    translate = {key: plan(amd, amd.hipify_step(key[0]), {key[0]: key[1]}) for key in files}
    checked: dict[FileKey, tuple[WarningCheck, Action]] = {}
    for path, digest in files:
        check = warning_check(store.get_text(digest, "replace"), tables)
        if check.lines:
            checked[(path, digest)] = (check, plan(amd, amd.hipify_warnings_step(path), {path: store.put(check.text)}))
    return translate, checked


def file_warnings(store, tables: WarningTables, key: FileKey, hip_digest: str, check: tuple | None,
                  outcomes: dict) -> str:
    """hipify-perl's default-mode warnings of one translated file."""
    path, digest = key
    text = ""
    if check is not None and (record := outcomes[check[1].key].record) is not None:
        text = map_line_numbers(store.get_text(record.stderr, "replace"), path, check[0].origins)
    return text + translated_text_warnings(path, store.get_text(digest, "replace"),
                                           store.get_text(hip_digest, "replace"), tables)
