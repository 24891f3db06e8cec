"""Run specs read from a tree's own build files (or a YAML file): pure functions, checked on small trees written here
and on real Makefiles of the HeCBench development copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from cass.sources.runspecs import Makefile, discover, program_invocations

HECBENCH = Path(__file__).resolve().parents[2] / "shared" / "hecbench" / "src"


def tree(files: dict[str, str]):
    """(sizes, reader, has_main) of an in-memory tree."""
    data = {path: text.encode() for path, text in files.items()}
    return ({p: len(d) for p, d in data.items()}, data.__getitem__, lambda p: b"int main(" in data[p])


def test_a_makefile_run_target_gives_the_arguments_working_directory_units_and_data():
    sizes, read, has_main = tree({
        "app/Makefile": "CC = nvcc\nprogram = main\nsource = main.cu kernels.cu util.cpp\n"
                        "obj = $(source:.cu=.o)\nLAUNCHER =\n\n$(program): $(obj)\n\t$(CC) $(obj) -o $@\n\n"
                        "run: $(program)\n\t$(LAUNCHER) ./$(program) 100 ../data/in.bin > log.txt\n"
                        "\t$(LAUNCHER) ./$(program) 200 ../data/in.bin\n",
        "app/main.cu": "int main() {}", "app/kernels.cu": "__global__ void k() {}", "app/util.cpp": "int u() {}",
        "app/other.cu": "int main() {}", "app/weights.txt": "1 2 3", "app/README.md": "docs",
        "data/in.bin": "bytes",
    })
    spec = discover(sizes, read, "app/main.cu", has_main, {})
    assert spec.source == "app/Makefile:run" and spec.workdir == "app"
    assert spec.arg_sets == [["100", "../data/in.bin"], ["200", "../data/in.bin"]]   # the redirection is not one
    assert spec.units == ["app/kernels.cu", "app/util.cpp"] and spec.units_source == "app/Makefile:sources"
    assert spec.inputs == ["app/weights.txt", "data/in.bin"] and spec.missing_inputs == []


def test_an_input_file_the_tree_lacks_is_named_and_cd_moves_the_working_directory():
    sizes, read, has_main = tree({
        "b/Makefile": "run:\n\tcd release && ./main --input ../graphs/web.egr -n 4\n",
        "b/main.cu": "int main() {}",
    })
    spec = discover(sizes, read, "b/main.cu", has_main, {})
    assert spec.workdir == "b/release" and spec.arg_sets == [["--input", "../graphs/web.egr", "-n", "4"]]
    assert spec.missing_inputs == ["b/graphs/web.egr"]


def test_a_data_file_where_the_built_program_goes_is_not_laid_out():
    """The binary is laid out as ``program`` in the working directory: a file of the folder by that name (an
    extensionless file, so ambient data) is not an input, which would replace the binary or clash with it."""
    sizes, read, has_main = tree({"app/Makefile": "run:\n\t./main 8\n", "app/main.cu": "int main() {}",
                                  "app/program": "old binary", "app/table": "1 2"})
    spec = discover(sizes, read, "app/main.cu", has_main, {})
    assert spec.workdir == "app" and spec.inputs == ["app/table"]


def test_without_a_build_file_units_are_the_folders_files_that_define_what_main_calls():
    sizes, read, has_main = tree({
        "p/main.cu": "int scale(int);\nint scale2(int);\nint main() { return scale(2) + scale2(1); }",
        "p/scale.cu": "int twice(int);\nint scale(int x) {\n  return twice(x);\n}",
        "p/twice.cpp": "int twice(int x) {\n  return 2 * x;\n}",
        "p/unrelated.cu": "__global__ void k(float *a) {\n  a[0] = 1;\n}",
        "p/included.cu": "int scale2(int x) {\n  return x;\n}",
    })
    spec = discover(sizes, read, "p/main.cu", has_main, {"p/included.cu": "p/scale.cu"})
    assert spec.source == "none" and spec.arg_sets == [[]] and spec.inputs == []
    # included.cu defines scale2, which main calls, but scale.cu #includes it: it is part of scale.cu's unit
    assert spec.units == ["p/scale.cu", "p/twice.cpp"] and spec.units_source == "symbols"


def test_only_the_programs_own_commands_inside_the_tree_count_and_outputs_are_not_inputs():
    sizes, read, has_main = tree({
        "r/Makefile": "EXE = solver\nrun: $(EXE)\n\n./configure:\n\ttrue\nrun: N = 7\nrun:\n"
                      "\t./configure --fast && ./solver -i in.txt -o out.txt --output=log.txt\n"
                      "\tcd /opt && ./solver 2\n\t./other 3\n",
        "r/main.cu": "int main() {}", "r/in.txt": "1", "r/huge.bin": "x",
    })
    sizes["r/huge.bin"] = 1 << 30   # a file of the folder too large to lay out, named by no argument
    spec = discover(sizes, read, "r/main.cu", has_main, {})
    assert spec.source == "r/Makefile:run" and spec.arg_sets == [["-i", "in.txt", "-o", "out.txt",
                                                                  "--output=log.txt"]]
    assert spec.inputs == ["r/in.txt"] and spec.missing_inputs == []


def test_a_yaml_run_spec_wins_over_the_build_file():
    sizes, read, has_main = tree({"q/Makefile": "run:\n\t./main 1\n", "q/main.cu": "int main() {}",
                                  "q/in/a.dat": "x"})
    overrides = {"q/*.cu": {"args": [["-f", "in/a.dat"], ["-f", "in/a.dat", "-v"]], "timeout_s": 120}}
    spec = discover(sizes, read, "q/main.cu", has_main, {}, overrides, "specs.yaml")
    assert spec.source == "specs.yaml" and spec.timeout_s == 120
    assert spec.arg_sets == [["-f", "in/a.dat"], ["-f", "in/a.dat", "-v"]] and spec.inputs == ["q/in/a.dat"]


def test_makefile_variables_expand_as_make_expands_them():
    makefile = Makefile.parse("A = x\nA += y\nB ?= $(A)\nB ?= no\nC := $(B:y=z) $$HOME\n# c\nD = \\\n  d1 d2\n",
                              lambda pattern: ["k1.cu", "k2.cu"] if pattern == "*.cu" else [])
    assert makefile.expand("$(C)") == "x z $HOME" and makefile.expand("${D}") == "d1 d2"
    assert makefile.expand("$(wildcard *.cu) $(shell rm -rf /)") == "k1.cu k2.cu "
    assert program_invocations(["@./prog -s 3 2>&1 | tee x", "mkdir out", "OMP=2 ./prog 4"]) == [
        (".", ["-s", "3"]), (".", ["4"])]


def test_the_hecbench_makefiles_give_run_specs():
    """Every CUDA program of the development copy whose Makefile has a `run:` target gets its arguments from it (CI
    has ../shared/hecbench beside the clone: no skip)."""
    files = {str(p.relative_to(HECBENCH)): p.stat().st_size for p in HECBENCH.rglob("*") if p.is_file()}
    mains = [p for p in files if p.endswith("-cuda/main.cu")]
    with_run = [m for m in mains if "\nrun:" in (HECBENCH / m).with_name("Makefile").read_text(errors="replace")]
    specs = [discover(files, lambda p: (HECBENCH / p).read_bytes(), m, lambda _: False, {}) for m in with_run]
    from_run = [s for s in specs if s.source.endswith("Makefile:run")]   # the rest run it through a launcher (mpirun)
    assert len(specs) > 300 and len(from_run) > 0.95 * len(specs)
    assert sum(s.arg_sets != [[]] for s in specs) > 250


def test_a_variable_assigned_with_colon_equals_expands_once():
    x = Makefile.parse("A = 1\nA := $(A) $(A)\nA := $(A) $(A)\n")
    assert x.expand("$(A)") == "1 1 1 1"   # `:=` expands once, where it is assigned


def test_a_cmake_test_gives_the_arguments_and_its_executable_the_units():
    sizes, read, has_main = tree({
        "c/CMakeLists.txt": "set(SOURCES main.cu stencil.cu)  # the solver\nadd_executable(solver ${SOURCES})\n"
                            "add_test(NAME small COMMAND solver 64 data/grid.txt\n"
                            "         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})\nadd_test(big solver 4096)\n"
                            "add_test(NAME other COMMAND other_tool 1)\n",
        "c/main.cu": "int main() {}", "c/stencil.cu": "__global__ void k() {}", "c/data/grid.txt": "0 1",
    })
    spec = discover(sizes, read, "c/main.cu", has_main, {})
    assert spec.source == "c/CMakeLists.txt:add_test" and spec.workdir == "c"
    assert spec.arg_sets == [["64", "data/grid.txt"], ["4096"]]
    assert spec.units == ["c/stencil.cu"] and spec.units_source == "c/CMakeLists.txt:add_executable"
    assert spec.inputs == ["c/data/grid.txt"]


def test_conditionals_keep_only_the_branches_that_hold_when_asked():
    """ifeq/ifneq (both spellings), ifdef/ifndef, else ifeq chains, nesting, and recipes inside a branch; a variable
    given on make's command line is unset. Without ``conditionals`` every branch is read (the run specs' reading)."""
    text = ("GPU = 1\nDEBUG = no\nF = -DBASE\n"
            "ifeq ($(GPU),1)\n  F += -DGPU\n  ifeq \"$(DEBUG)\" \"yes\"\n    F += -DDEBUG\n  endif\nendif\n"
            "ifeq ($(ARCH),arm)\n  F += -DARM\nelse ifeq ($(ARCH),)\n  F += -DNOARCH\nelse\n  F += -DOTHER\nendif\n"
            "ifdef DEBUG\n  F += -DHASDEBUG\nendif\nifndef UNSET\n  F += -DUNSET\nendif\n"
            "ifneq ($(GPU),1)\nall:\n\tgcc -DCPU_ONLY x.c\nelse\nall:\n\tnvcc $(F) x.cu\nendif\n")
    followed = Makefile.parse(text, conditionals=True)
    assert followed.expand("$(F)").split() == ["-DBASE", "-DGPU", "-DNOARCH", "-DHASDEBUG", "-DUNSET"]
    assert followed.recipes["all"] == [["nvcc $(F) x.cu"]]
    assert "-DDEBUG" in Makefile.parse(text).expand("$(F)").split()   # every branch read
    chain = Makefile.parse("A = 1\nifeq ($(A),1)\n F = one\nelse ifeq ($(A),1)\n F = two\nelse\n F = three\nendif\n"
                           "E = $(NOTHING)\nifdef E\n G = set\nendif\n", conditionals=True)
    assert chain.expand("$(F) $(G)") == "one set"   # the first branch that holds, only; ifdef does not expand


def test_a_makefile_value_that_explodes_is_refused():
    text = "A0 = x\n" + "".join(f"A{i} = " + " ".join([f"$(A{i - 1})"] * 8) + "\n" for i in range(1, 12))
    with pytest.raises(ValueError, match="expands to over"):
        Makefile.parse(text).expand("$(A11)")
