"""CUDA programs written by a language model from the CASS paper's prompt templates (stage ``synthesize``:
:mod:`cass.stages.synthesize`)."""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from pathlib import Path

import datasketch
import polars as pl
import yaml

from cass.dedup.minhash import MinHashParams, content_key, signatures
from cass.models.backends import Backend, Messages, Sampling
from cass.models.completions import complete_all, extract
from cass.pipeline.manifests import StageOutput, sample_id
from cass.text.cuda import main_signature
from cass.text.filters import defines_kernel
from cass.training.qwen import wheel_encoder
from store import Store

ORIGIN = "synthetic"
TEMPLATES_FILE = Path(__file__).with_name("synthetic_templates.yaml")
ANSWER_FENCE = "cuda"
REQUESTS_SCHEMA = {
    "sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String, "draw": pl.Int64,
    "template_id": pl.String, "category": pl.String, "persona": pl.String, "variables": pl.String,
    "prompt": pl.String, "model": pl.String, "completion": pl.String, "extracted": pl.String, "digest": pl.String,
    "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64, "status": pl.String, "detail": pl.String,
}
"""One row per draw: ``variables`` and ``model`` as JSON; ``completion`` and ``digest`` (the program) are store
digests; ``status`` is ``kept`` or the drop reason."""
KEPT = "kept"


@dataclass(frozen=True)
class Templates:
    """The prompt templates: per template id (``<category>/<name>``) its text; what fills them."""

    instruction: str
    personas: dict[str, str]
    templates: dict[str, str]
    placeholders: dict[str, list[str]]

    @classmethod
    def load(cls, path: Path) -> Templates:
        """Read and check a templates file: every placeholder a template uses has values."""
        raw = yaml.safe_load(path.read_text())
        templates = {f"{category}/{name}": text for category, named in raw["categories"].items()
                     for name, text in named.items()}
        values = {name: [str(v) for v in vs] for name, vs in raw["placeholders"].items()}
        for template_id, text in templates.items():
            if missing := [p for p in placeholders_of(text) if not values.get(p)]:
                raise ValueError(f"{path}: template {template_id} uses {missing}, which have no values")
        return cls(raw["instruction"].strip(), raw["personas"], templates, values)

    @property
    def categories(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for template_id in self.templates:
            found.setdefault(template_id.split("/")[0], []).append(template_id)
        return found


def placeholders_of(text: str) -> list[str]:
    """The placeholders of a template, in order of first use."""
    return list(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(text) if name))


@dataclass(frozen=True)
class Draw:
    """One drawn prompt."""

    number: int
    template_id: str
    persona: str
    variables: dict[str, str]
    task: str
    messages: Messages

    @property
    def path(self) -> str:
        return f"{self.template_id}/{self.number:06d}.cu"

    @property
    def identity(self) -> dict:
        return {"sample_id": sample_id(ORIGIN, self.path), "origin": ORIGIN, "path": self.path, "domain": None}


def weights(mix: dict, known: list[str], what: str) -> list[float]:
    """The weights of ``known`` names from a params mix, which names only known ones and weighs some above 0."""
    if unknown := sorted(set(mix) - set(known)):
        raise ValueError(f"synthesize.{what} names {unknown}; the {what} are {sorted(known)}")
    found = [float(mix.get(name, 0)) for name in known]
    if any(w < 0 for w in found) or not any(found):
        raise ValueError(f"synthesize.{what}: weights must be >= 0 and not all 0, got {dict(mix)}")
    return found


def draw_prompts(templates: Templates, count: int, seed: int, categories: dict, personas: dict) -> list[Draw]:
    """``count`` prompts drawn with ``seed`` (draw ``i`` does not depend on ``count``)."""
    rng = random.Random(seed)
    names = sorted(templates.categories)
    category_weights = weights(categories, names, "categories")
    persona_names = sorted(templates.personas)
    persona_weights = weights(personas, persona_names, "personas")
    draws = []
    for number in range(count):
        category = rng.choices(names, category_weights)[0]
        template_id = rng.choice(templates.categories[category])
        persona = rng.choices(persona_names, persona_weights)[0]
        text = templates.templates[template_id]
        variables = {name: rng.choice(templates.placeholders[name]) for name in placeholders_of(text)}
        task = text.format(**variables)
        messages = [{"role": "system", "content": templates.personas[persona]},
                    {"role": "user", "content": f"{task}\n\n{templates.instruction}"}]
        draws.append(Draw(number, template_id, persona, variables, task, messages))
    return draws


def duplicates(texts: list[str], params: MinHashParams, exact_key) -> dict[int, tuple[str, int, str]]:
    """Per text that repeats an earlier one: (``duplicate``/``near_duplicate``, the earlier one's index, detail).
    First wins: a text is compared with the earlier texts kept (an LSH index of their MinHash signatures, banded
    to miss few pairs at the threshold), so its fate never depends on the texts after it; of several matches the
    most similar, then the earliest, is named; ``exact_key`` makes the key two exact duplicates share."""
    found: dict[int, tuple[str, int, str]] = {}
    first: dict[object, int] = {}
    sigs = signatures(texts, params)
    try:   # banding weighted against misses: every candidate's similarity is checked anyway
        index = datasketch.MinHashLSH(threshold=params.threshold, num_perm=params.num_perm, weights=(0.1, 0.9))
    except ValueError as exc:
        raise ValueError(f"near-duplicate threshold {params.threshold} with {params.num_perm} permutations: {exc}; "
                         "choose a lower threshold") from exc
    for i, text in enumerate(texts):
        key = exact_key(text)
        if key in first:
            found[i] = ("duplicate", first[key], "the same text")
            continue
        first[key] = i
        sketch = datasketch.MinHash(num_perm=params.num_perm, seed=params.seed, hashvalues=sigs[i], scheme="affine32")
        near = [(float((sigs[i] == sigs[j]).mean()), j) for j in index.query(sketch)]
        if near and (best := max(near, key=lambda found: (found[0], -found[1])))[0] >= params.threshold:
            found[i] = ("near_duplicate", best[1], f"estimated Jaccard {best[0]:.3f}")
        else:
            index.insert(i, sketch)
    return found


def program_check(code: str) -> tuple[str, str] | None:
    """Why extracted code is not a program the pipeline can use (reason, detail), or None."""
    if not code.strip():
        return "empty_answer", "the answer holds no code"
    if not defines_kernel(code):
        return "no_kernel", "no __global__ function outside comments and strings"
    if main_signature(code) is None:
        return "no_main", "no int main(...)"
    return None


def synthesize(store: Store, out: StageOutput, params: dict, backend: Backend) -> tuple[pl.DataFrame, dict]:
    """Every draw's row (:data:`REQUESTS_SCHEMA`) and the run report; each draw not kept is dropped in ``out``, the
    stage's output (its stage names the parameters' section)."""
    stage = out.stage
    sp, dp = params[stage], params["dedup"]
    templates = Templates.load(Path(sp["templates"]))
    draws = draw_prompts(templates, sp["programs"], sp["seed"], sp["categories"], sp["personas"])
    out.rows_in = len(draws)
    status: dict[int, tuple[str, str]] = {}

    prompt_mh = MinHashParams(sp["prompt_dedup"]["ngram"], dp["num_perm"], dp["seed"], sp["prompt_dedup"]["threshold"])
    prompt_texts = [f"{d.messages[0]['content']}\n{d.task}" for d in draws]
    for i, (kind, earlier, detail) in duplicates(prompt_texts, prompt_mh, str).items():
        status[i] = (f"{kind}_prompt", f"{detail} as draw {draws[earlier].path}")

    sampling = Sampling(sp["temperature"], sp["top_p"], sp["max_new_tokens"], 1, sp["seed"])
    asked = {(d.path, stage): d.messages for d in draws if d.number not in status}
    texts, counts, failed = complete_all(store, backend, asked, sampling, stage)
    identity = json.dumps(backend.identity, sort_keys=True)
    encoder = wheel_encoder()
    rows, codes = [], {}
    for d in draws:
        row = {**d.identity, "draw": d.number, "template_id": d.template_id, "category": d.template_id.split("/")[0],
               "persona": d.persona, "variables": json.dumps(d.variables, sort_keys=True), "prompt": d.task,
               "model": identity, "completion": None, "extracted": None, "digest": None,
               "prompt_tokens": sum(len(encoder.encode(m["content"])) for m in d.messages),
               "completion_tokens": None}
        if (d.path, stage, 0) in failed:
            status[d.number] = ("request_failed", failed[d.path, stage, 0])
        elif d.number not in status:
            text = texts[d.path, stage, 0]
            code, how = extract(text, ANSWER_FENCE)
            row.update(completion=store.put_text(text), extracted=how, completion_tokens=len(encoder.encode(text)))
            if reason := program_check(code):
                status[d.number] = reason
            else:
                row["digest"] = store.put_text(code + "\n")
                codes[d.number] = code
        rows.append(row)

    programs = [r for r in rows if r["draw"] in codes]
    output_mh = MinHashParams(dp["ngram"], dp["num_perm"], dp["seed"], dp["threshold"])
    for i, (kind, earlier, detail) in duplicates([codes[r["draw"]] for r in programs], output_mh,
                                                 content_key).items():
        status[programs[i]["draw"]] = (f"{kind}_output", f"{detail} as {programs[earlier]['path']}")
    for row in rows:
        reason, detail = status.get(row["draw"], (KEPT, ""))
        row.update(status=reason, detail=detail)
        if reason != KEPT:
            out.drop(row, reason, detail)
    report = {"requests": {"asked": len(asked), **counts, "failed": len(failed)}}
    return pl.DataFrame(rows, schema=REQUESTS_SCHEMA), report


def token_summary(requests: pl.DataFrame) -> dict:
    """Qwen2.5 tokens per request and per kept program: what a server's cost scales with."""
    answered = requests.filter(pl.col("completion_tokens").is_not_null())
    kept = requests.filter(pl.col("status") == KEPT).height
    completion = int(answered["completion_tokens"].sum() or 0)
    prompt = int(answered["prompt_tokens"].sum() or 0)
    return {"answered": answered.height, "prompt_total": prompt, "completion_total": completion,
            "prompt_mean": round(prompt / answered.height, 1) if answered.height else None,
            "completion_mean": round(completion / answered.height, 1) if answered.height else None,
            "completion_per_kept_program": round(completion / kept, 1) if kept else None}
