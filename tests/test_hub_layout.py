"""A Hub config written from many parts into many shards: every row once, in the shard its key picks, each shard
sorted; the same shards whether the rows come from one table or from several files."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cass.engine.stage_work import LocalWork
from cass.hub.layout import STAGING, Config, FileParts, FrameParts, shard_of, write_configs
from store import digest_bytes


def shard_bytes_of(root: Path, config: Config) -> list[bytes]:
    return [(root / path).read_bytes() for path in config.paths]


def test_a_config_from_several_files_is_sharded_by_key_and_equals_the_one_table_version(tmp_path):
    table = pl.DataFrame({"sample_id": [f"s{i:03d}" for i in range(60)], "origin": ["a", "b", "bench"] * 20,
                          "text": [f"text {i} " * (i % 7 + 1) for i in range(60)]})
    files = []
    for n, part in enumerate(table.sample(fraction=1.0, shuffle=True, seed=3).iter_slices(17)):   # 4 unsorted files
        files.append(tmp_path / f"part-{n}.parquet")
        part.write_parquet(files[-1])
    keep = pl.col("origin") != "bench"
    wanted = table.filter(keep)
    shard_bytes = wanted.estimated_size() // 3
    config = write_configs(LocalWork(2, in_process_limit_s=0), tmp_path / "many",
                           {"pairs": (FileParts(tuple(files), keep), "sample_id")},
                           shard_bytes)["pairs"]   # parts and shards on two worker processes
    assert config.rows == wanted.height == 40 and len(config.paths) >= 3 and config.schema == table.schema
    shards = [pl.read_parquet(tmp_path / "many" / path) for path in config.paths]
    assert sorted(pl.concat(shards)["sample_id"]) == sorted(wanted["sample_id"])   # every row once
    for number, shard in enumerate(shards):
        assert shard["sample_id"].to_list() == sorted(shard["sample_id"])
        assert {shard_of(key, len(shards)) for key in shard["sample_id"]} <= {number}
    assert not (tmp_path / "many" / STAGING / "pairs").exists()
    assert config.digest == digest_bytes("".join(digest_bytes(s) for s in shard_bytes_of(tmp_path / "many", config))
                                             .encode())[:16]
    one = write_configs(LocalWork(1), tmp_path / "one", {"pairs": (FrameParts(wanted), "sample_id")},
                        shard_bytes)["pairs"]
    assert one.paths == config.paths and one.digest == config.digest
    assert [(tmp_path / "one" / p).read_bytes() for p in one.paths] == \
        [(tmp_path / "many" / p).read_bytes() for p in config.paths]
