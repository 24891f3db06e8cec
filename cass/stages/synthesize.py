"""Stage ``synthesize``: CUDA programs written by a language model from the CASS paper's prompt templates,
the origin ``synthetic`` (off by default).

1. Draw ``synthesize.programs`` prompts with ``synthesize.seed``: a category by the ``categories`` mix, one of its
   templates (:data:`TEMPLATES_FILE`: the paper's appendix A.5.1), a persona by the ``personas`` mix (the system
   message), a value for each placeholder. Item ``i`` is the ``i``-th draw: more programs keep the first ones.
2. Prompt-space duplicates are not sent: the same persona and task again (``duplicate_prompt``), or a near
   duplicate of an earlier one kept, MinHash over their words (``near_duplicate_prompt``, ``synthesize.prompt_dedup``).
3. Completions through a model backend (:mod:`cass.models.backends`), each a cached action of the store keyed by
   the model's identity, the messages and the sampling parameters, recorded as it arrives: a killed run resumes
   where it stopped and an unchanged one sends no request. A request the server refuses alone (400, 413, 422) is
   counted (``request_failed``) and asked again by the stage's next run; a server that cannot answer stops it.
4. Code from the answer's ``cuda`` fence (else its first fence, else the whole text); a program is kept only if
   it defines a ``__global__`` kernel and an ``int main`` (``empty_answer``, ``no_kernel``, ``no_main``), and is
   not an output-space duplicate of an earlier program (``duplicate_output``; ``near_duplicate_output`` with the
   ``dedup`` parameters).

Every draw is a row of ``data/synthesize/requests.parquet`` with its template, persona, variables, token counts
(Qwen2.5 vocabulary) and status; the kept programs are the stage's manifest, which ``ingest`` reads (path
``<category>/<template>/<draw>.cu``) and ``yield_report`` follows to pairs per template.
"""

from __future__ import annotations

import sys
from collections import Counter

import polars as pl

from cass.models.backends import BackendUnavailable, load_backend, start_optional_stage
from cass.pipeline.context import Stage
from cass.pipeline.manifests import write_parquet
from cass.sources.synthetic import KEPT, REQUESTS_SCHEMA, synthesize, token_summary


def run(stage: Stage) -> None:
    params = stage.params
    sp = params[stage.name]
    if not start_optional_stage(stage.name, stage.data_dir, sp["enabled"]):
        return
    backend = load_backend(sp, params["tiny_model"])
    out = stage.output()
    try:
        requests, report = synthesize(stage.store, out, params, backend)
    except BackendUnavailable as exc:   # what came back is in the store
        sys.exit(f"synthesize: {exc}; the completions that came back are kept: run again to resume")
    kept = requests.filter(pl.col("status") == KEPT).select(*list(REQUESTS_SCHEMA)[:4], "digest", "template_id",
                                                            "model")
    write_parquet(requests, stage.data_dir / "requests.parquet")
    out.extra_metrics.update(
        enabled=True, model=backend.identity, templates=sp["templates"],
        tokens=token_summary(requests), extracted=dict(sorted(Counter(requests["extracted"].drop_nulls()).items())))
    out.run = report
    metrics = out.write(kept)
    asked = report["requests"]
    print(f"synthesize: {metrics['in']} drawn, {asked['asked']} asked ({asked['generated']} generated, "
          f"{asked['hits']} from the store, {asked['failed']} refused), {metrics['kept']} programs kept; dropped "
          f"{metrics['dropped_by_reason']}; per template: data/yield_report/yield.md after yield_report")
