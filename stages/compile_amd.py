"""Stage compile_amd: hipified sources -> host x86 assembly and gfx assembly for every arch."""

from stages.compiling import compile_stage

if __name__ == "__main__":
    compile_stage("compile_amd", vendor="amd", upstream="hipify", files_column="hip_files")
