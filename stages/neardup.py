"""Near-duplicate detection for code: code-aware shingles, MinHash signatures, LSH, clusters.

* Tokens keep identifiers, numbers (with suffixes) and operators (multi-character ones whole);
  comments and whitespace are dropped, nothing is lower-cased or renumbered: ``a+b`` and
  ``a-b`` differ, and so do ``256`` and ``512``.
* Shingles are ``ngram`` consecutive tokens, hashed to 32 bits by mixing the tokens' xxh64
  hashes; MinHash signatures come from datasketch's ``MinHash.bulk`` (``affine32`` scheme) fed
  those hashes through an explicit ``hashfunc=int``.
* LSH bands the signature (``bands`` x ``rows``, chosen for the threshold by datasketch's
  optimiser); band hashes are grouped in Polars; every document in a bucket is linked to the
  bucket's first document, and a link is kept only when the signatures' estimated Jaccard
  similarity reaches the threshold. Clusters are the connected components of the kept links,
  found by min-label propagation in Polars.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import datasketch
import numpy as np
import polars as pl
import xxhash
from datasketch.lsh import _optimal_param

TOKENIZER_VERSION = 1
_FNV_PRIME = np.uint64(1099511628211)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TOKEN = re.compile(
    r"[\w.]+"                                   # identifiers, numbers with their suffixes, a.b
    r"|<<=?|>>=?|->|\+\+|--|&&|\|\||::|[-+*/%&|^!=<>]="  # multi-character operators, whole
    r"|[^\w\s]"                                 # any other single character
)


def tokens(source: str) -> list[str]:
    """Code tokens of ``source`` with comments removed."""
    return _TOKEN.findall(_COMMENT.sub(" ", source))


def normalised(source: str) -> str:
    """Source with comments removed and whitespace collapsed: the exact-duplicate key's input."""
    return " ".join(tokens(source))


_TOKEN_HASHES: dict[str, int] = {}
_MIX = np.uint64(0x9E3779B97F4A7C15)


def shingle_hashes(toks: Sequence[str], ngram: int) -> np.ndarray:
    """Distinct 32-bit hashes of the ``ngram``-token shingles (a short document is one shingle).

    Each token is hashed once with xxh64 (memoised); a shingle's hash mixes its tokens' hashes
    in order, so it depends on exactly those tokens in that order."""
    cache = _TOKEN_HASHES
    ids = np.fromiter((cache.get(t) or cache.setdefault(t, xxhash.xxh64_intdigest(t.encode())) for t in toks),
                      dtype=np.uint64, count=len(toks))
    width = min(ngram, len(ids))
    count = max(len(ids) - ngram + 1, 1 if len(ids) else 0)
    acc = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(width):
            acc = (acc * _MIX) ^ ids[k:k + count]
    return np.unique(((acc >> np.uint64(32)) ^ acc) & np.uint64(0xFFFFFFFF))


@dataclass(frozen=True)
class MinHashParams:
    """Everything a signature depends on; recorded with every dedup result."""

    ngram: int
    num_perm: int
    seed: int
    threshold: float

    def describe(self) -> dict:
        bands, rows = self.bands_rows()
        return {"datasketch": datasketch.__version__, "scheme": "affine32", "hashfunc": "xxh64 token mix",
                "tokenizer_version": TOKENIZER_VERSION, "ngram": self.ngram, "num_perm": self.num_perm,
                "seed": self.seed, "threshold": self.threshold, "bands": bands, "rows": rows}

    def bands_rows(self) -> tuple[int, int]:
        return _optimal_param(self.threshold, self.num_perm, 0.5, 0.5)


def signatures(sources: Sequence[str], params: MinHashParams) -> np.ndarray:
    """MinHash signatures (len(sources) x num_perm, uint32) through datasketch's bulk path, fed
    precomputed shingle hashes (``hashfunc=int``)."""
    sets = (shingle_hashes(tokens(s), params.ngram).tolist() for s in sources)
    hashes = datasketch.MinHash.bulk(sets, num_perm=params.num_perm, seed=params.seed, hashfunc=int,
                                     scheme="affine32")
    return np.array([m.hashvalues for m in hashes], dtype=np.uint32).reshape(len(sources), params.num_perm)


def similarity(sig: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity of the signature rows ``left[i]`` and ``right[i]``."""
    return (sig[left] == sig[right]).mean(axis=1)


def candidate_links(sig: np.ndarray, params: MinHashParams) -> pl.DataFrame:
    """Links (doc, first) between documents sharing an LSH bucket, with their estimated
    similarity, keeping those at or above the threshold."""
    bands, rows = params.bands_rows()
    n = sig.shape[0]
    if n == 0:
        return pl.DataFrame(schema={"doc": pl.Int64, "first": pl.Int64, "similarity": pl.Float64})
    band_keys = np.zeros((n, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for b in range(bands):
            for j in range(b * rows, (b + 1) * rows):  # FNV-style mix of the band's values
                band_keys[:, b] = (band_keys[:, b] * _FNV_PRIME) ^ sig[:, j].astype(np.uint64)
    table = pl.DataFrame({
        "doc": np.repeat(np.arange(n, dtype=np.int64), bands),
        "band": np.tile(np.arange(bands, dtype=np.int32), n),
        "key": band_keys.reshape(-1),
    })
    links = (
        table.with_columns(pl.col("doc").min().over("band", "key").alias("first"))
        .filter(pl.col("doc") != pl.col("first"))
        .select("doc", "first")
        .unique()
        .sort("doc", "first")
    )
    sims = similarity(sig, links["doc"].to_numpy(), links["first"].to_numpy()) if links.height else np.array([])
    return links.with_columns(pl.Series("similarity", sims, dtype=pl.Float64)).filter(
        pl.col("similarity") >= params.threshold)


def components(n: int, links: pl.DataFrame) -> np.ndarray:
    """Connected-component label (smallest member index) of each of ``n`` documents."""
    label = pl.DataFrame({"doc": np.arange(n, dtype=np.int64), "label": np.arange(n, dtype=np.int64)})
    edges = pl.concat([links.select(pl.col("doc").alias("a"), pl.col("first").alias("b")),
                       links.select(pl.col("first").alias("a"), pl.col("doc").alias("b"))])
    while True:
        proposed = (
            edges.join(label, left_on="b", right_on="doc").group_by("a").agg(pl.col("label").min().alias("via"))
        )
        updated = label.join(proposed, left_on="doc", right_on="a", how="left").with_columns(
            pl.min_horizontal("label", pl.col("via").fill_null(pl.col("label"))).alias("new")
        )
        if (updated["new"] == updated["label"]).all():
            return updated.sort("doc")["label"].to_numpy()
        label = updated.select("doc", pl.col("new").alias("label"))
