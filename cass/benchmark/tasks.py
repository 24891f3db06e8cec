"""The translation benchmark's tasks (``translation_bench/tasks``) and the predictions made for them.

A task is a CUDA program with its metadata, its reference HIP translation and its reference stdout (recorded on a
GPU host; see ``translation_bench/README.md``); with a hidden argument set (a seed no prompt shows) and the output
and kernel counts recorded for it. Predictions are JSONL or Parquet rows of
``{task_id, task, prediction}``, ``task`` being ``source`` (HIP for the CUDA program) or ``asm``, with an optional
``sample`` (0, 1, ...) where several predictions are drawn for one task (pass@k).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import yaml

TASKS_DIR = Path("translation_bench") / "tasks"
REFERENCES_FILE = "references.json"
"""Beside the tasks folder: the GPU host the references were recorded on, and per task its kernel counts."""
TASK_KINDS = ("source", "asm")
PREDICTION_SUFFIXES = (".jsonl", ".parquet")


@dataclass(frozen=True)
class Task:
    """One benchmark task."""

    id: str
    path: str
    """The CUDA program's path under the tasks folder (``<domain>/<id>.cu``): the name every build of the task's
    texts uses, as the pipeline's own stages do for origin ``bench``, so both share the store's actions."""
    domain: str
    difficulty: str
    constructs: tuple[str, ...]
    cuda: str
    reference_hip: str
    reference_stdout: bytes
    hidden_args: tuple[str, ...] = ()
    """The hidden argument set (the generator's seed: never shown in a prompt), or none."""
    hidden_stdout: bytes | None = None
    """The CUDA program's output on the hidden arguments (``<id>.hidden.stdout``), recorded on a GPU host."""
    kernel_launches: dict[str, list[int]] = field(default_factory=dict, compare=False)
    """The kernels each recorded run of the CUDA program launched, per argument set (``references.json``)."""

    def arguments(self, arg_set: str) -> tuple[str, ...]:
        return () if arg_set == "visible" else self.hidden_args

    @property
    def arg_sets(self) -> tuple[str, ...]:
        """The argument sets a prediction runs on: the visible one (no argument), and the hidden one where its
        output is recorded."""
        return ("visible", "hidden") if self.hidden_args and self.hidden_stdout is not None else ("visible",)

    def recorded_output(self, arg_set: str) -> bytes:
        return self.reference_stdout if arg_set == "visible" else self.hidden_stdout


def load_tasks(root: Path = TASKS_DIR) -> dict[str, Task]:
    """Every task under ``root``, by id (a task missing a file, or whose metadata names another id, is an error),
    with the kernel counts of ``references.json`` beside ``root`` where it has them."""
    references = root.parent / REFERENCES_FILE
    counts = ({t: r.get("kernel_launches", {}) for t, r in json.loads(references.read_text())["tasks"].items()}
              if references.is_file() else {})
    tasks = {}
    for meta_path in sorted(root.glob("*/*.yaml")):
        meta = yaml.safe_load(meta_path.read_text())
        stem = meta_path.with_suffix("")
        if meta.get("id") != stem.name:
            raise ValueError(f"{meta_path}: id {meta.get('id')!r} is not the file's name {stem.name!r}")
        missing = [s for s in (".cu", ".hip", ".stdout") if not stem.with_suffix(s).is_file()]
        if missing:
            names = ", ".join(stem.name + s for s in missing)
            raise FileNotFoundError(f"task {stem.name}: no {names} in {stem.parent}")
        path = stem.with_suffix(".cu").relative_to(root).as_posix()
        hidden = stem.with_suffix(".hidden.stdout")
        tasks[stem.name] = Task(stem.name, path, meta["domain"], meta["difficulty"], tuple(meta["constructs"]),
                                stem.with_suffix(".cu").read_text(), stem.with_suffix(".hip").read_text(),
                                stem.with_suffix(".stdout").read_bytes(), tuple(meta.get("hidden_args", ())),
                                hidden.read_bytes() if hidden.is_file() else None, counts.get(stem.name, {}))
    if not tasks:
        raise FileNotFoundError(f"no tasks under {root}")
    return tasks


@dataclass(frozen=True)
class Prediction:
    task_id: str
    task: str
    prediction: str | dict[str, str]
    """The HIP text; for a real-program task also the files by path (:mod:`cass.benchmark.real_tasks`)."""
    sample: int = 0
    """Which of several samples for the same task and kind this is (pass@k is computed over them)."""


class PredictionsError(ValueError):
    """A predictions file that cannot be evaluated; the message names the file, the line and the cause."""


def read_predictions(path: Path, tasks: dict) -> list[Prediction]:
    """The predictions of a JSONL (one object per line) or Parquet file, checked against ``tasks`` (of either
    suite)."""
    if path.suffix == ".parquet":
        try:
            rows = pl.read_parquet(path).to_dicts()
        except Exception as exc:
            raise PredictionsError(f"{path}: not a readable Parquet file: {exc}") from exc
        numbered = [(f"row {i}", row) for i, row in enumerate(rows)]
    else:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise PredictionsError(f"{path}: cannot be read: {exc}") from exc
        numbered = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                numbered.append((f"line {n}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise PredictionsError(f"{path}:{n}: not a JSON object: {exc}") from exc
    predictions, seen = [], set()
    for where, row in numbered:
        if not isinstance(row, dict) or not {"task_id", "task", "prediction"} <= set(row):
            raise PredictionsError(f"{path} {where}: needs the keys task_id, task and prediction")
        if row["task_id"] not in tasks:
            raise PredictionsError(f"{path} {where}: unknown task_id {row['task_id']!r}")
        if row["task"] not in TASK_KINDS:
            raise PredictionsError(f"{path} {where}: task is {row['task']!r}, not one of {list(TASK_KINDS)}")
        prediction = row["prediction"]
        if isinstance(prediction, list) and all(isinstance(f, dict) and {"path", "text"} <= set(f) for f in prediction):
            prediction = {f["path"]: f["text"] for f in prediction}   # Parquet: a list of {path, text}
        real = hasattr(tasks[row["task_id"]], "overlay")   # a task of the real-program suite
        if real and row["task"] != "source":
            raise PredictionsError(f"{path} {where}: task {row['task_id']} is a real program: source predictions only")
        if real and isinstance(prediction, dict):
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in prediction.items()):
                raise PredictionsError(f"{path} {where}: prediction maps a path to something not a string")
            task = tasks[row["task_id"]]
            bad = [p for p in prediction if p not in task.files and (
                posixpath.normpath(p) != p or not p.startswith(task.folder + "/"))]
            if bad:
                raise PredictionsError(f"{path} {where}: {bad[0]} is neither a file of task {row['task_id']} nor a "
                                       f"plain path in its folder {task.folder}/")
        elif not isinstance(prediction, str):
            raise PredictionsError(f"{path} {where}: prediction is not a string (a real-program task also takes "
                                   "an object of path: text)")
        sample = row.get("sample", 0)
        if type(sample) is not int or sample < 0:
            raise PredictionsError(f"{path} {where}: sample is {sample!r}, not a number from 0")
        if (row["task_id"], row["task"], sample) in seen:
            raise PredictionsError(f"{path} {where}: a second prediction for {row['task_id']} ({row['task']}, "
                                   f"sample {sample})")
        seen.add((row["task_id"], row["task"], sample))
        predictions.append(Prediction(row["task_id"], row["task"], prediction, sample))
    return predictions
