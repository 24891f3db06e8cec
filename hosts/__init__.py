"""Where work runs away from the driver's process: vendor and stage hosts on Dask ``distributed``
(:mod:`hosts.cluster`) and GPU hosts, reached through the cluster or by copying a batch folder (:mod:`hosts.gpu`).

It sits beside ``toolchains/`` and ``store/`` and imports nothing from the library: a vendor host needs these three
folders, Dask's ``distributed`` and its toolchain, and a GPU host's batch runner (``python -m hosts.gpu run-batch``)
these three folders and blake3 alone. Which of them a run uses is decided in one place, :mod:`cass.engine.placement`.
"""
