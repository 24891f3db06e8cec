"""The DVC stages: one entry point per stage of dvc.yaml, each a few lines that call the library (:mod:`cass`).

Started as ``python -m stages.<name>``, a stage runs on an idle warm worker of this project where one is listening
(:mod:`cass.pipeline.stage_worker`; ``CASS_STAGE_WORKERS=0`` turns them off)."""

from cass.pipeline.stage_worker import delegate

delegate()
