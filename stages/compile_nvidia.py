"""Stage compile_nvidia: CUDA sources -> host x86 assembly and SASS for every sm arch."""

from stages.compiling import compile_stage

if __name__ == "__main__":
    compile_stage("compile_nvidia", vendor="nvidia", upstream="dedup", files_column="files")
