"""Execution-verified pairs: both programs of a pair built for an NVIDIA GPU, run there, and compared."""
