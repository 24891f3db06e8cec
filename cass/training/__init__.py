"""Training data: prompts, tokenizers and token counts, the instruct export, the dataset export."""
