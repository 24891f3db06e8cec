"""Compiling samples with one vendor's toolchain, as cached actions, for the compile stages.

Each sample gets the toolchain's targets (host assembly, device assembly per arch). Every step is
an action of its own, so adding an arch runs only that arch's actions; targets sharing a step
(NVIDIA's host compile also keeps the first arch's cubin) run it once. All first steps start
at once, largest inputs first, and a target's next step is queued ahead of them as soon as its
previous one succeeds (cuobjdump right after its nvcc), so no core waits for a batch's stragglers
(:mod:`cass.engine.targets`). A failure of a sample the dataset leaves out of scope is counted apart.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import polars as pl

from cass.engine.actions import pipeline_toolchains
from cass.engine.settle import Lookups, Settled, settle_ladder
from cass.engine.targets import TargetRun, failure_reason
from cass.pipeline.context import Stage
from cass.pipeline.manifests import ASM_LIST, SAMPLE_COLUMNS, attach
from toolchains import Toolchain
from toolchains.amd_build_root import AmdBuildRootToolchain
from toolchains.debian_cuda import DebianCudaToolchain, build_root_of
from toolchains.diagnostics import missing_header
from toolchains.language import is_opencl
from toolchains.launchers import ChrootLauncher

_INCLUDED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.M)


class Scope:
    """What the dataset leaves out of scope (params.yaml ``scope``): samples that need an API of one of
    ``apis`` (a graphics API, MPI: patterns of the header names they include), and, where ``libraries`` is
    set, samples the NVIDIA side fails for a header they include in angle brackets and it does not have: most
    often a system or library header neither vendor side provides (the AMD side mirrors the NVIDIA side's
    system headers and maps only CUDA's), though a project may spell its own headers so too."""

    def __init__(self, params: dict):
        self.apis = {name: re.compile("|".join(patterns)) for name, patterns in params["apis"].items() if patterns}
        self.libraries = params["libraries"]

    def needs(self, texts: list[str]) -> str | None:
        """The out-of-scope API the sample's files include a header of, if any."""
        included = [name.strip() for text in texts for _, name in _INCLUDED.findall(text)]
        return next((api for api, pattern in self.apis.items() if any(pattern.search(n) for n in included)), None)

    def reason(self, vendor: str, category: str, texts: list[str], missing: str | None = None) -> str | None:
        """``out_of_scope:<why>`` for a failure of this category (``missing``: the header not found), or None
        when the failure is in scope."""
        if api := self.needs(texts):
            return f"out_of_scope:{api}"
        if self.libraries and vendor == "nvidia" and category == "missing_header" and missing and \
                any(bracket == "<" and name.strip() == missing for text in texts for bracket, name in
                    _INCLUDED.findall(text)):
            return "out_of_scope:library"
        return None


def scoped_failure(toolchain: Toolchain, run: TargetRun, store, unresolved: Collection[str], scope: Scope,
                   files: Collection[str]) -> tuple[str, str]:
    """:func:`failure_reason`, with a compile failure of a sample out of ``scope`` (its ``files``' digests) counted
    ``out_of_scope:<why>``."""
    reason, detail = failure_reason(toolchain, run, store, unresolved)
    category = reason.removeprefix("compile_failed:")
    if reason.startswith("compile_failed:") and (scoped := scope.reason(
            toolchain.vendor, category, [store.get_text(d, "replace") for d in files], missing_header(detail))):
        return scoped, f"{category}: {detail}"
    return reason, detail


def compile_stage(stage: Stage, vendor: str, upstream: str, files_column: str) -> None:
    """Compile every sample of ``upstream``'s manifest with ``vendor``'s toolchain. The stage's workers plan the
    samples a chunk at a time and settle every one whose actions the store has (its manifest row, or why it drops);
    the driver runs the actions the store lacks on the executor, then the workers settle the samples that waited for
    them. With ``nvidia.debian_cuda``, a sample the NVIDIA toolchain fails is compiled again with the Debian suite's
    own CUDA, with ``amd.build_root_headers`` one the AMD toolchain fails for a missing header with the build root's
    headers (:func:`fallbacks`); ``<vendor>_toolchain`` names the toolchain that compiled each row."""
    toolchain = pipeline_toolchains(stage.params, (vendor,))[vendor]
    vparams = stage.params[vendor]
    rows = stage.upstream(upstream)
    out = stage.output(rows.height)
    rungs = [toolchain, *fallbacks(stage.params, toolchain)]
    added = settle_ladder(stage, out, rows, rungs, RETRIED[vendor], vparams["timeout_s"], compiled_chunk, vendor,
                          vparams, stage.params["scope"], files_column).added
    out.extra_metrics["archs"] = vparams["archs"]
    if len(rungs) > 1:   # which compiler compiled how many rows, and its version
        out.extra_metrics["compiled_by"] = {tc.vendor: sum(row[f"{vendor}_toolchain"] == tc.vendor for row in added)
                                            for tc in rungs}
        compiler = "nvcc" if vendor == "nvidia" else "hipcc"
        out.extra_metrics["fallbacks"] = {tc.vendor: tc.version(compiler) for tc in rungs[1:]}
    print(out.write(attach(rows, added, {f"{vendor}_host_asm": pl.String, f"{vendor}_device_asm": ASM_LIST,
                                         f"{vendor}_toolchain": pl.String})))


def fallbacks(params: dict, toolchain: Toolchain) -> list[Toolchain]:
    """The toolchains that compile, in turn, what the pipeline's ``toolchain`` fails, all in the Debian packages'
    build root (``debian_sources.build_root``): on the NVIDIA side the Debian suite's CUDA
    (:mod:`toolchains.debian_cuda`) where ``nvidia.debian_cuda`` is on, on the AMD side the AMD root with the build
    root's headers after its own (:mod:`toolchains.amd_build_root`) where ``amd.build_root_headers`` is on; else
    none."""
    if toolchain.vendor == "nvidia" and params["nvidia"]["debian_cuda"]:
        return [DebianCudaToolchain(build_root_of(params["debian_sources"]))]
    if toolchain.vendor == "amd" and params["amd"]["build_root_headers"]:
        if not isinstance(toolchain.launcher, ChrootLauncher):
            raise ValueError("amd.build_root_headers needs the AMD toolchain in its root on this machine (params.yaml "
                             "amd.toolchain; no executor.scheduler, no CASS_ROCM_PATH)")
        return [AmdBuildRootToolchain(toolchain.launcher.root,
                                      build_root_of(params["debian_sources"], AmdBuildRootToolchain.setting))]
    return []


def retried_on_nvidia(sample: dict, reason: str) -> bool:
    """Whether a CUDA ``sample`` dropped for ``reason`` goes to the next NVIDIA toolchain: a compile failure, or a
    library header the toolchain lacks (another may have it); not a sample out of scope for its API, nor a timeout,
    nor OpenCL C (the fallbacks compile CUDA only)."""
    return not is_opencl(sample["path"]) and (reason.startswith("compile_failed:") or reason == "out_of_scope:library")


def retried_on_amd(sample: dict, reason: str) -> bool:
    """Whether a HIP ``sample`` dropped for ``reason`` goes to the next AMD toolchain: only a header the AMD root
    lacks (the build root's headers are all the fallback adds); not OpenCL C."""
    return not is_opencl(sample["path"]) and reason == "compile_failed:missing_header"


RETRIED = {"nvidia": retried_on_nvidia, "amd": retried_on_amd}
"""Each side's rule for what its ladder's next toolchain compiles again."""


def compiled_chunk(rows: pl.DataFrame, carried: dict | None, lookups: Lookups, toolchain: Toolchain, side: str,
                   vparams: dict, scope: dict, files_column: str) -> Settled:
    """The samples of a chunk through their targets as far as the store goes (:mod:`cass.engine.settle`; planned
    afresh in the second pass too): each one's finished artifacts stored (the host and device assembly columns), or
    why it is dropped, or, where an action is missing, left waiting with its target runs at it. ``side``: the vendor
    whose columns the rows get (``toolchain`` may be another of that vendor's toolchains)."""
    store = lookups.store
    vendor, rules = toolchain.vendor, Scope(scope)
    by_sample: dict[str, list[TargetRun]] = {}
    for row in rows.iter_rows(named=True):
        files = row[files_column]
        inputs = {f["path"]: f["digest"] for f in files}
        flags = {**vparams["flags"], "common": toolchain.build_flags(vparams["flags"]["common"], row["build_flags"])}
        targets = toolchain.targets(files[0]["path"], vparams["archs"], flags, row["include_dirs"])
        by_sample[row["sample_id"]] = [TargetRun(t, inputs) for t in targets]
    lookups.advance(toolchain, [r for runs in by_sample.values() for r in runs])

    chunk = Settled()
    for row in rows.iter_rows(named=True):
        runs = by_sample[row["sample_id"]]
        if waiting := [r for r in runs if r.pending]:
            chunk.wait(row["sample_id"], {vendor: waiting})
            continue
        if failed := [r for r in runs if r.failure is not None]:
            chunk.dropped.append(({c: row[c] for c in SAMPLE_COLUMNS}, *scoped_failure(
                toolchain, failed[0], store, row["unresolved_includes"], rules,
                [f["digest"] for f in row[files_column]])))
            continue
        artifacts = {r.target: store.put(toolchain.finish(r.target, store.get(r.inputs[r.target.artifact])))
                     for r in runs}
        chunk.added.append({
            "sample_id": row["sample_id"],
            f"{side}_host_asm": next((d for t, d in artifacts.items() if t.kind == "host"), None),   # OpenCL: none
            f"{side}_device_asm": [{"arch": t.arch, "digest": d} for t, d in artifacts.items() if t.kind == "device"],
            f"{side}_toolchain": vendor,
        })
    return chunk
