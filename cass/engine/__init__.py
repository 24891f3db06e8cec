"""The action engine: content-keyed actions and their runner (:mod:`.actions`), targets of several steps
(:mod:`.targets`), and the cached map every per-item cache uses (:mod:`.cached`)."""
