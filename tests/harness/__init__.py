"""Harnesses the tests and the benchmarks share (not part of the shipped package)."""
