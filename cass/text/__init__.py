"""Text of CUDA and of assembly: filters, SASS and AMD GPU assembly normalised and split per kernel,
kernel names and sources."""
