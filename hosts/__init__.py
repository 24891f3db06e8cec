"""Where work runs away from the driver's process: vendor and stage hosts on Dask ``distributed``
(:mod:`hosts.cluster`) and GPU hosts, reached through the cluster or by copying a batch folder (:mod:`hosts.gpu`).

It sits beside ``toolchains/`` and ``store/`` and imports nothing from the library, so a vendor or GPU host needs
these three folders and blake3 alone; which of them a run uses is decided in one place,
:mod:`cass.engine.placement`.
"""
