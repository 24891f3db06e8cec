"""Out of scope: failures of samples that need a graphics API, MPI or a library neither vendor side has are
counted under their own reason, not as compile failures (real nvcc on small samples)."""

from __future__ import annotations

import yaml
from harness.project import REPO

from cass.compiling.compile import Scope, scoped_failure
from cass.engine.actions import ActionRunner
from cass.engine.targets import TargetRun, run_targets
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


def test_a_chunk_compiled_from_the_store_alone_equals_the_driver_s_build(toolchains, store):
    """A stage host compiles a chunk with a toolchain sent as its report and a runner that only reads the store:
    before the tools ran every sample is left to the driver; after, it gives the driver's rows and drops exactly."""
    import pickle

    import polars as pl

    from cass.compiling.compile import compile_samples, compiled_chunk

    nvidia = toolchains["nvidia"]
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    vparams = {**params["nvidia"], "archs": ["sm_89"]}
    names = ["ok.cu", "typo.cu", "mpi.cu"]
    rows = pl.DataFrame([{"sample_id": name, "origin": "test", "path": name, "domain": "test",
                          "files": [{"path": name, "digest": store.put(SAMPLES[name].encode())}],
                          "include_dirs": ["."], "unresolved_includes": []} for name in names])
    sent = pickle.loads(pickle.dumps(nvidia))
    assert type(sent).__name__ == "ReportedNvidiaToolchain"
    before = compiled_chunk(rows, str(store.root), sent, vparams, params["scope"], "files")
    assert sorted(before.unsettled) == sorted(names) and before.added.height == 0 and before.hits == 0

    built = compile_samples(store, nvidia, ActionRunner(store, local_executor({"nvidia": nvidia}), 300), rows,
                            vparams, SCOPE, "files")
    after = compiled_chunk(rows, str(store.root), sent, vparams, params["scope"], "files")
    assert built.unsettled == after.unsettled == []
    assert after.added.equals(built.added) and after.added["sample_id"].to_list() == ["ok.cu"]
    assert after.added["nvidia_device_asm"][0][0]["arch"] == "sm_89"
    assert after.dropped == built.dropped
    assert {identity["sample_id"]: reason for identity, reason, _ in after.dropped} == {
        "typo.cu": "compile_failed:syntax", "mpi.cu": "out_of_scope:mpi"}
    assert after.hits == len(after.keys) > 0
