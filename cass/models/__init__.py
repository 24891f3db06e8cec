"""Models in the loop: backends that generate translations (a local transformers model, or an OpenAI-compatible
chat server), the small random model built offline from a config, and the train and generate stages."""
