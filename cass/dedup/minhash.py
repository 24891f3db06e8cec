"""Near-duplicate detection for code: code-aware shingles, MinHash signatures, LSH, clusters.

* Tokens keep identifiers, numbers (with suffixes) and operators; comments and whitespace are
  dropped, nothing is lower-cased or renumbered: ``a+b`` and ``a-b`` differ, and so do ``256``
  and ``512``. Tokenising and token hashing are vectorised with NumPy.
* Shingles are ``ngram`` consecutive tokens, hashed to 32 bits by mixing the tokens' 64-bit
  hashes; MinHash signatures are datasketch's (``affine32`` scheme, its permutations and
  finaliser, ``hashfunc=int`` over those shingle hashes), applied to whole arrays.
* LSH bands the signature (``bands`` x ``rows``, chosen for the threshold by datasketch's
  optimiser); band hashes are grouped in Polars; every document in a bucket is linked to the
  bucket's first document, and a link is kept only when the signatures' estimated Jaccard
  similarity reaches the threshold. Clusters are the connected components of the kept links,
  found by min-label propagation in Polars.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import datasketch
import numpy as np
import polars as pl
from datasketch.lsh import _optimal_param
from datasketch.minhash import _fmix

from cass.text.cuda import strip_comments

TOKENIZER_VERSION = 3
_FNV_PRIME = np.uint64(1099511628211)
_SPACE, _WORDCHAR, _PUNCT = 0, 1, 2
_CLASS = np.full(256, _PUNCT, dtype=np.uint8)
"""Byte classes: one table lookup per byte, then cheap comparisons."""
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.":
    _CLASS[_c] = _WORDCHAR
_CLASS[128:] = _WORDCHAR  # bytes of non-ASCII UTF-8 characters belong to words
for _c in b" \t\n\r\f\v":
    _CLASS[_c] = _SPACE
_BASE = np.uint64(0x100000001B3)
_BASE_INV = np.uint64(pow(0x100000001B3, -1, 2**64))
_powers = np.ones(1, dtype=np.uint64)
_inverse_powers = np.ones(1, dtype=np.uint64)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _power_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE**i and BASE**-i modulo 2**64 for i < n (grown on demand, kept between calls)."""
    global _powers, _inverse_powers
    if len(_powers) < n:
        size = max(n, 2 * len(_powers))
        with np.errstate(over="ignore"):
            _powers = np.cumprod(np.full(size, _BASE, dtype=np.uint64)) * _BASE_INV
            _inverse_powers = np.cumprod(np.full(size, _BASE_INV, dtype=np.uint64)) * _BASE
    return _powers[:n], _inverse_powers[:n]


def token_hashes(source: str) -> np.ndarray:
    """64-bit hashes of the code tokens of ``source``, in order, comments removed.

    A token is a run of word characters (letters, digits, ``_``, ``.``: identifiers and numbers
    with their suffixes stay whole) or one punctuation character (operators are kept, a
    two-character operator as two tokens). Nothing is lower-cased or renumbered. The hash of a
    token is a polynomial in its bytes, computed for all tokens at once with prefix sums."""
    data = np.frombuffer(strip_comments(source).encode("utf-8", "replace"), dtype=np.uint8)
    if data.size == 0:
        return np.zeros(0, dtype=np.uint64)
    classes = _CLASS[data]
    word = classes == _WORDCHAR
    punct = classes == _PUNCT
    # tokens never overlap, so the i-th start (in byte order) pairs with the i-th end
    starts = np.flatnonzero(punct | (word & ~np.concatenate(([False], word[:-1]))))
    ends = np.flatnonzero(punct | (word & ~np.concatenate((word[1:], [False])))) + 1
    powers, inverse = _power_tables(data.size + 1)
    with np.errstate(over="ignore"):
        prefix = np.concatenate((np.zeros(1, dtype=np.uint64),
                                 np.cumsum(data.astype(np.uint64) * powers[:data.size], dtype=np.uint64)))
        return (prefix[ends] - prefix[starts]) * inverse[starts]


def content_key(source: str) -> bytes:
    """Bytes that are equal for sources that differ only in comments and whitespace."""
    return token_hashes(source).tobytes()


def shingle_hashes(tokens: np.ndarray, ngram: int) -> np.ndarray:
    """Distinct 32-bit hashes of the ``ngram``-token shingles of a token-hash sequence (a short
    document is one shingle); a shingle's hash mixes its tokens' hashes in order."""
    width = min(ngram, len(tokens))
    count = max(len(tokens) - ngram + 1, 1 if len(tokens) else 0)
    acc = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(width):
            acc = (acc * _MIX) ^ tokens[k:k + count]
    hashes = np.sort((((acc >> np.uint64(32)) ^ acc) & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    # sort + neighbour mask: the same sorted set as np.unique, several times faster on NumPy 2.x
    return hashes[np.concatenate(([True], hashes[1:] != hashes[:-1]))] if hashes.size else hashes


@dataclass(frozen=True)
class MinHashParams:
    """Everything a signature depends on; recorded with every dedup result."""

    ngram: int
    num_perm: int
    seed: int
    threshold: float

    def describe(self) -> dict:
        bands, rows = self.bands_rows()
        return {"datasketch": datasketch.__version__, "scheme": "affine32", "hashfunc": "token polynomial mix",
                "tokenizer_version": TOKENIZER_VERSION, "ngram": self.ngram, "num_perm": self.num_perm,
                "seed": self.seed, "threshold": self.threshold, "bands": bands, "rows": rows}

    def bands_rows(self) -> tuple[int, int]:
        return optimal_bands_rows(self.threshold, self.num_perm)


@functools.cache   # datasketch integrates numerically over every split of num_perm: 0.09 s a call
def optimal_bands_rows(threshold: float, num_perm: int) -> tuple[int, int]:
    """LSH bands and rows for ``threshold`` (datasketch's optimiser, false positives and negatives
    weighted equally)."""
    return _optimal_param(threshold, num_perm, 0.5, 0.5)


def signatures(sources: Sequence[str], params: MinHashParams) -> np.ndarray:
    """MinHash signatures (len(sources) x num_perm, uint32), equal to datasketch's
    ``MinHash.bulk(shingle hash lists, hashfunc=int, scheme="affine32")``: the permutations and
    the finaliser are datasketch's own; the update is applied to each document's whole array at
    once instead of through a Python call per shingle (tests check the two agree)."""
    proto = datasketch.MinHash(num_perm=params.num_perm, seed=params.seed, hashfunc=int, scheme="affine32")
    a, b = proto.permutations
    out = np.empty((len(sources), params.num_perm), dtype=np.uint32)
    scratch = np.empty((0, params.num_perm), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i, source in enumerate(sources):
            hv = _fmix(shingle_hashes(token_hashes(source), params.ngram).reshape(-1, 1), 32)
            if not len(hv):  # no tokens at all: datasketch's empty signature
                out[i] = proto.hashvalues
                continue
            if len(scratch) < len(hv):
                scratch = np.empty((max(len(hv), 2 * len(scratch)), params.num_perm), dtype=np.uint32)
            permuted = scratch[:len(hv)]
            np.multiply(hv, a, out=permuted)
            np.add(permuted, b, out=permuted)
            np.minimum(proto.hashvalues, permuted.min(axis=0), out=out[i])
    return out


def signatures_parallel(sources: Sequence[str], params: MinHashParams, workers: int,
                        chunk: int = 2000) -> np.ndarray:
    """``signatures`` over ``workers`` processes, in chunks; the same result, in order."""
    if workers <= 1 or len(sources) <= chunk:
        return signatures(sources, params)
    parts = [sources[i:i + chunk] for i in range(0, len(sources), chunk)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return np.concatenate(list(pool.map(signatures, parts, [params] * len(parts))))


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
