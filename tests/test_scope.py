"""Out of scope: failures of samples that need a graphics API, MPI or a library neither vendor side has are
counted under their own reason, not as compile failures (real nvcc on small samples)."""

from __future__ import annotations

import yaml
from harness.project import REPO

from cass.compiling.compile import Scope, scoped_failure
from cass.engine.actions import ActionRunner
from cass.engine.targets import TargetRun, run_targets
from store import tracking
from toolchains import local_executor

SCOPE = Scope(yaml.safe_load((REPO / "params.yaml").read_text())["scope"])
KERNEL = "__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n"
SAMPLES = {
    "mpi.cu": "#include <mpi.h>\n" + KERNEL,                                   # not on the include path
    "gl.cu": "#include <GL/gl.h>\n" + KERNEL + "void draw() { glUndeclaredCall(); }\n",   # GL is, the call is not
    "zmq.cu": "#include <zmq.h>\n" + KERNEL,                                   # a library neither side has
    "own.cu": '#include "config_generated.h"\n' + KERNEL,                      # the project's own header
    "typo.cu": KERNEL + "int broken( {\n",
    "ok.cu": "#include <cuda_runtime.h>\n" + KERNEL,
}


def test_failures_out_of_scope_get_their_own_reason(toolchains, store):
    nvidia = toolchains["nvidia"]
    runner = ActionRunner(store, local_executor({"nvidia": nvidia}), 300)
    flags = {"common": ["-std=c++17", "-w"], "host": ["-O1"], "opencl": []}
    runs = {}
    for name, text in SAMPLES.items():
        host = next(t for t in nvidia.targets(name, ["sm_89"], flags) if t.kind == "host")
        runs[name] = TargetRun(host, {name: store.put(text.encode())})
    run_targets(nvidia, runner, list(runs.values()))
    reasons = {name: scoped_failure(nvidia, run, store, (), SCOPE, list(run.inputs.values()))[0]
               for name, run in runs.items() if run.failure is not None}
    assert reasons == {"mpi.cu": "out_of_scope:mpi", "gl.cu": "out_of_scope:graphics",
                       "zmq.cu": "out_of_scope:library", "own.cu": "compile_failed:missing_header",
                       "typo.cu": "compile_failed:syntax"}
    assert SCOPE.needs(["#include \"cuda_gl_interop.h\"\n", "#include <vulkan/vulkan.h>"]) == "graphics"
    assert SCOPE.needs(["#include <stdio.h>\n#include \"my_gl_helpers.h\"\n"]) is None


def test_a_chunk_is_compiled_from_the_store_alone_on_a_worker(toolchains, store):
    """A worker plans a chunk with a toolchain sent as its report and settles it from the store alone: before the
    tools ran every sample waits at its first action; once the driver ran those, every sample gets its row or
    its reason; an action the driver saw fail transiently drops its sample as ``transient``."""
    import pickle

    import polars as pl

    from cass.compiling.compile import compiled_chunk
    from cass.engine.actions import plan
    from cass.engine.settle import settle_chunk

    nvidia = toolchains["nvidia"]
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    vparams = {**params["nvidia"], "archs": ["sm_89"]}
    names = ["ok.cu", "typo.cu", "mpi.cu"]
    rows = pl.DataFrame([{"sample_id": name, "origin": "test", "path": name, "domain": "test",
                          "files": [{"path": name, "digest": store.put(SAMPLES[name].encode())}],
                          "include_dirs": ["."], "unresolved_includes": [], "build_flags": []} for name in names])
    sent = pickle.loads(pickle.dumps(nvidia))
    assert type(sent).__name__ == "ReportedNvidiaToolchain"
    args = (compiled_chunk, str(store.root), ("nvidia",), (sent, "nvidia", vparams, params["scope"], "files"))

    before = settle_chunk((rows, None), *args, {})
    assert before.added == [] and before.found == {"nvidia": set()} and sorted(before.missing) == sorted(names)
    assert before.unsettled == dict.fromkeys(names)   # the second pass gets only the carries (compiling carries none)
    pending = [r for missing in before.missing.values() for r in missing["nvidia"]]
    assert {r.next_step for r in pending} == {0}
    typo_run = before.missing["typo.cu"]["nvidia"][0]
    typo = plan(nvidia, typo_run.target.steps[0], typo_run.inputs).key
    told = settle_chunk((rows, None), *args, {typo: "killed by signal 9"})
    assert [(identity["sample_id"], reason) for identity, reason, _ in told.dropped] == [("typo.cu", "transient")]

    run_targets(nvidia, ActionRunner(store, local_executor({"nvidia": nvidia}), 300), pending)
    waited = settle_chunk((rows, before.unsettled), *args, {})   # the second pass: its lookups are not counted
    assert waited.unsettled == {} and waited.found == {}
    with tracking() as looked_up:
        after = settle_chunk((rows, None), *args, {})
    assert after.unsettled == {} and after.found["nvidia"] == looked_up != set()
    assert (after.added, after.dropped) == (waited.added, waited.dropped)
    assert [a["sample_id"] for a in after.added] == ["ok.cu"]
    assert [a["arch"] for a in after.added[0]["nvidia_device_asm"]] == ["sm_89"]
    assert ".nv_fatbin" not in store.get_text(after.added[0]["nvidia_host_asm"])   # finished as the driver would
    assert {identity["sample_id"]: reason for identity, reason, _ in after.dropped} == {
        "typo.cu": "compile_failed:syntax", "mpi.cu": "out_of_scope:mpi"}
