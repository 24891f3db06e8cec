"""Stage ``ingest``: every source of CUDA files becomes samples in the store, with provenance.

Sources (all optional but the list of local trees):

* local directory trees (``corpus.trees`` in params.yaml; origin named there);
* cloned repositories at pinned revisions (the ``clone_repos`` stage's manifest; origin
  ``repos``; sample paths are ``<repository>/<path>``);
* The Stack v2 files fetched by ``fetch_stack`` (origin ``stack_v2``; single files, no headers);
* the programs ``synthesize`` kept (origin ``synthetic``; single files, the model as provenance).

For a file of a tree, the headers it reaches and the include directories that find them are
chosen by :mod:`cass.sources.includes` and recorded (``files``, ``include_dirs``, ``unresolved_includes``,
``include_conflicts``), with its compile context from its own build where it has one (``build_context``,
``build_flags``: :mod:`cass.sources.build_context`; the configure steps in ``build_contexts.parquet``). Every
file, headers included, is screened by :mod:`cass.sources.screen` (size, binary, encoding); a sample whose main
file or header fails is dropped with the reason. Each sample gets a domain label from :mod:`cass.sources.domains`.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import manifest_path, write_parquet
from cass.sources.ingest import (
    BUILD_CONTEXTS_SCHEMA,
    CONFIGURED_SCHEMA,
    SCHEMA,
    IngestError,
    Source,
    StackRows,
    SynthesizedRows,
    TreeSource,
    cloned_repositories,
    debian_packages,
    fetched_stack,
    file_chunks,
    ingest_source,
    stack_licenses,
)


def run(stage: Stage) -> None:
    params = stage.params
    out = stage.output()
    extensions = params["corpus"]["extensions"]
    cparams = params["configure"]

    def configure(values: dict | None) -> dict | None:
        """A tree's configure values (the global ones, then its own), or None when configuring is off."""
        return {**cparams["values"], **(values or {})} if cparams["enabled"] else None

    sources: list[Source] = []
    for tree in params["corpus"]["trees"]:
        root = Path(tree["path"])
        if not root.is_dir():
            sys.exit(f"ingest: corpus tree {root} (params.yaml corpus.trees) is not a directory")
        specs = Path(tree["run_specs"]) if tree.get("run_specs") else None
        sources.append(TreeSource(root, tree["origin"], tuple(tree.get("extensions", extensions)),
                                  prefix=tree.get("prefix", ""), select=tuple(tree.get("paths", ())),
                                  configure=configure(tree.get("configure")), run_specs=specs))
    fetched = fetched_stack(stage.upstream_path("fetch_stack"))
    sources += cloned_repositories(stage.upstream_path("clone_repos"), extensions, params["repositories"]["timeout_s"],
                                   stack_licenses(fetched), configure)
    sources += debian_packages(stage.upstream_path("fetch_debian"), params, extensions, configure)
    sources += file_chunks(StackRows, fetched)
    synthesized = stage.upstream_path("synthesize")
    sources += file_chunks(SynthesizedRows, pl.read_parquet(synthesized) if synthesized.exists() else None)
    worker_params = {"filter": {k: params["filter"][k] for k in ("max_bytes", "decode_fallbacks")},
                     "domains": {"keywords_file": params["domains"]["keywords_file"]},
                     "build_context": params["build_context"]}
    rows, configured, not_selected = [pl.DataFrame(schema=SCHEMA)], [pl.DataFrame(schema=CONFIGURED_SCHEMA)], Counter()
    contexts = [pl.DataFrame(schema=BUILD_CONTEXTS_SCHEMA)]
    try:   # every source on the stage's workers (a tree, or a chunk of single files, each)
        for part in stage.work.map(ingest_source, sources, str(stage.store.root), worker_params, stage.name,
                                   count=len(sources), label=lambda source: source.name):
            rows.append(part.rows)
            configured.append(part.configured)
            contexts.append(part.build_contexts)
            out.dropped += part.dropped
            out.rows_in += part.rows_in
            not_selected.update(part.not_selected)
    except RuntimeError as exc:
        if isinstance(exc.__cause__, IngestError):
            sys.exit(str(exc.__cause__))
        raise
    kept = pl.concat(rows)
    duplicate_ids = kept.filter(pl.col("sample_id").is_duplicated())
    if duplicate_ids.height:
        sys.exit(f"ingest: two sources produce the same origin/path: {duplicate_ids['path'].to_list()[:5]}")
    configured = pl.concat(configured)
    write_parquet(configured, manifest_path(stage.name, "configured"), sort_by="path")
    contexts = pl.concat(contexts)
    write_parquet(contexts, manifest_path(stage.name, "build_contexts"), sort_by=["tree", "project", "source"])
    out.extra_metrics["by_origin"] = dict(sorted(kept["origin"].value_counts().iter_rows()))
    out.extra_metrics["by_domain"] = dict(sorted(kept["domain"].value_counts().iter_rows()))
    out.extra_metrics["transcoded"] = kept.filter(pl.col("source_encoding") != "utf-8").height
    out.extra_metrics["with_include_conflicts"] = kept.filter(pl.col("include_conflicts").list.len() > 0).height
    out.extra_metrics["configured_headers"] = configured.height
    out.extra_metrics["with_configured_headers"] = dict(sorted(
        kept.filter(pl.col("configured_headers").list.len() > 0)["origin"].value_counts().iter_rows()))
    out.extra_metrics["with_unresolved_includes"] = kept.filter(pl.col("unresolved_includes").list.len() > 0).height
    out.extra_metrics["not_selected"] = dict(sorted(not_selected.items()))
    out.extra_metrics["by_build_context"] = dict(sorted(
        kept["build_context"].str.replace(r":.*", "").value_counts().iter_rows()))
    out.extra_metrics["configure_steps"] = dict(sorted(
        (contexts["source"] + " " + contexts["status"]).value_counts().iter_rows()))
    print(out.write(kept))
