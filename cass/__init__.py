"""The `cass` command line: what is not a DVC stage (toolchain checks, store inspection)."""
