"""The DVC stages: one entry point per stage of dvc.yaml, each a few lines that call the library (:mod:`cass`)."""
