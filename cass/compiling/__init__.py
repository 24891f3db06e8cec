"""Compiling: cached tool actions, the compile stages, toolchain fingerprints, pairing."""
