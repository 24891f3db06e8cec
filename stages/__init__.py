"""The pipeline's DVC stages, one module each (see dvc.yaml)."""
