"""Stage compile_amd: hipified (and repaired) sources -> host x86 assembly and gfx assembly for every arch."""

from stages.compiling import compile_stage

if __name__ == "__main__":
    compile_stage("compile_amd", vendor="amd", upstream="repair", files_column="hip_files")
