"""The Hugging Face Hub: the dataset layout and card (layout), uploading it (publish)."""
