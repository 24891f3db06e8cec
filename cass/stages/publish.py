"""Stage ``publish``: upload ``data/hub/`` to a Hugging Face dataset repository, incrementally.

With ``publish.enabled``, the stage creates the repository if it is missing (``HfApi.create_repo``,
``exist_ok``), lists what the target revision holds (``list_repo_tree``, with LFS hashes), and
makes one commit (``create_commit``) of only the files whose content differs (LFS files compared
by SHA-256, others by git blob id) plus deletions of files under ``data/`` the layout no longer
has. ``publish.dry_run`` prints that plan and sends nothing. The token comes from the
environment (``HF_TOKEN``, as huggingface_hub reads it). Transient Hub errors (429, 5xx,
connection errors, timeouts) are retried with exponential backoff. ``metrics/publish.json``
records the plan and the commit.
"""

from __future__ import annotations

from huggingface_hub import HfApi

from cass.hub.publish import publish
from cass.pipeline.context import Stage
from cass.pipeline.metrics import write_metrics


def run(stage: Stage) -> None:
    pparams = stage.params["publish"]
    if not pparams["enabled"]:
        metrics = {"enabled": False}
    else:
        metrics = publish(HfApi(), stage.upstream_dir("hub"), pparams)
        for path in metrics["upload"]:
            print(f"{'would upload' if pparams['dry_run'] else 'uploaded'}: {path}")
        for path in metrics["delete"]:
            print(f"{'would delete' if pparams['dry_run'] else 'deleted'}: {path}")
    write_metrics(stage.name, metrics)
    print(metrics)
