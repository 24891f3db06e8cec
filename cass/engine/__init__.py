"""The action engine: content-keyed actions and their runner (:mod:`.actions`), targets of several steps
(:mod:`.targets`), the cached map every per-item cache uses (:mod:`.cached`), a tool stage's rows settled in two
passes (:mod:`.settle`), a stage's own work on workers (:mod:`.stage_work`), and where work runs
(:mod:`.placement`)."""
