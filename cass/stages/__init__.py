"""One module per stage of dvc.yaml, named after it: the stage's work, over the domain packages of
:mod:`cass` (plain libraries). ``stages/<stage>.py`` is the DVC entry point that runs it."""
