"""Benchmark: near-duplicate removal at corpus scale, against planted truth.

The corpus: generated CUDA programs of 100-500 lines (bench/gen_corpus.py, 6-30 kernels each),
plus planted variants of some of them made by the edits that make real near-duplicates: renamed
identifiers, reordered kernels, changed constants, added comments, at several intensities. The
true Jaccard similarity of each planted pair is computed exactly on the pipeline's shingle sets.

It prints, measured in the same run: signature throughput on one core (the pipeline's path;
datasketch's plain one-MinHash-per-document path with its default SHA1 hashing; datasketch's
``MinHash.bulk`` on the pipeline's own shingles, the same signatures; ``rensa``'s ``RMinHash`` on the
same shingles), the pairs each path finds on a 20,000-file slice with the same LSH banding and how
they agree with the pipeline's and with the planted truth, end-to-end time
and peak memory of signatures + LSH + clustering on the full corpus with all cores, recall of
planted pairs at Jaccard >= 0.8, how many planted pairs under 0.5 were wrongly merged, the
precision of removals, determinism, and the signature cache's behaviour when files are added.

    python bench/dedup.py --files 200000 [--out bench/RESULTS-dedup.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import resource
import sys
import tempfile
import time
from datetime import date
from importlib.metadata import version
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import datasketch  # noqa: E402
import rensa  # noqa: E402  (pip install -e ".[bench]")

from bench.gen_corpus import program  # noqa: E402
from cass.dedup.corpus import cached_signatures  # noqa: E402
from cass.dedup.minhash import (  # noqa: E402
    MinHashParams,
    candidate_links,
    components,
    shingle_hashes,
    signatures,
    signatures_parallel,
    token_hashes,
)
from store import Store  # noqa: E402

PARAMS = MinHashParams(ngram=5, num_perm=256, seed=1, threshold=0.7)
IDENT = re.compile(r"\b[a-z]+_[a-z]+_\d+_\d+\b")
FLOAT = re.compile(r"-?\d+\.\d+f")
WORDS = re.compile(r"[\w.]+|[^\w\s]")


def rename(text: str, rng: random.Random, fraction: float) -> str:
    names = sorted(set(IDENT.findall(text)))
    chosen = rng.sample(names, max(1, int(len(names) * fraction))) if names else []
    for name in chosen:
        text = re.sub(rf"\b{name}\b", f"renamed_{rng.randrange(10**6)}", text)
    return text


def reorder(text: str, rng: random.Random) -> str:
    head, _, rest = text.partition("\n// ")
    body, _, tail = rest.partition("\nint main()")
    blocks = ("// " + body).split("\n\n// ")
    rng.shuffle(blocks)
    return head + "\n" + "\n\n// ".join(blocks) + "\nint main()" + tail


def change_constants(text: str, rng: random.Random, fraction: float) -> str:
    return FLOAT.sub(lambda m: f"{rng.uniform(-4, 4):.4f}f" if rng.random() < fraction else m.group(0), text)


def add_comments(text: str, rng: random.Random, fraction: float) -> str:
    lines = text.split("\n")
    for _ in range(int(len(lines) * fraction)):
        lines.insert(rng.randrange(len(lines)), f"    // note {rng.randrange(10**6)}: checked against the reference")
    return "\n".join(lines)


def replace_kernels(text: str, rng: random.Random, fraction: float) -> str:
    """Rewrite a fraction of the kernels with new ones (a derived program, no longer a copy)."""
    replacement = program(rng, rng.randrange(10**6), (6, 30)).split("\n// ")
    parts = text.split("\n// ")
    for i in range(1, len(parts) - 1):
        if rng.random() < fraction:
            parts[i] = replacement[min(i, len(replacement) - 2)]
    return "\n// ".join(parts)


def mutate(text: str, rng: random.Random) -> str:
    """A variant of ``text`` with a random mix and intensity of edits, from a light touch to a
    rewrite of most kernels."""
    intensity = rng.choice([0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.8])
    if rng.random() < 0.4:
        text = replace_kernels(text, rng, intensity)
    if rng.random() < 0.5:
        text = rename(text, rng, intensity)
    if rng.random() < 0.3:
        text = reorder(text, rng)
    if rng.random() < 0.6:
        text = change_constants(text, rng, intensity)
    if rng.random() < 0.5:
        text = add_comments(text, rng, intensity / 2)
    return text


def jaccard(a: str, b: str) -> float:
    sa, sb = shingle_hashes(token_hashes(a), PARAMS.ngram), shingle_hashes(token_hashes(b), PARAMS.ngram)
    inter = np.intersect1d(sa, sb, assume_unique=True).size
    return inter / (sa.size + sb.size - inter)


def make_corpus(total: int, planted_fraction: float, seed: int) -> tuple[list[str], list[tuple[int, int, float]]]:
    rng = random.Random(seed)
    texts: list[str] = []
    planted: list[tuple[int, int, float]] = []
    while len(texts) < total:
        base = len(texts)
        texts.append(program(rng, base, (6, 30)))
        if rng.random() < planted_fraction and len(texts) < total:
            texts.append(mutate(texts[base], rng))
            planted.append((base, len(texts) - 1, -1.0))
    return texts, planted


def throughput(fn, texts: list[str]) -> float:
    start = time.perf_counter()
    fn(texts)
    return len(texts) / (time.perf_counter() - start)


def plain_datasketch(texts: list[str]) -> None:
    for text in texts:
        toks = WORDS.findall(text)
        m = datasketch.MinHash(num_perm=PARAMS.num_perm)
        for i in range(max(len(toks) - PARAMS.ngram + 1, 1)):
            m.update(" ".join(toks[i:i + PARAMS.ngram]).encode())


def shingles(text: str) -> np.ndarray:
    return shingle_hashes(token_hashes(text), PARAMS.ngram)


def bulk_datasketch(texts: list[str]) -> np.ndarray:
    """datasketch's ``MinHash.bulk`` over the pipeline's shingles (its fastest path, same scheme)."""
    found = datasketch.MinHash.bulk([shingles(t) for t in texts], num_perm=PARAMS.num_perm, seed=PARAMS.seed,
                                    hashfunc=int, scheme="affine32")
    return np.array([m.hashvalues for m in found], dtype=np.uint32)


def rensa_signatures(texts: list[str]) -> np.ndarray:
    """rensa's ``RMinHash`` over the same shingles (as decimal strings: rensa hashes str/bytes items)."""
    out = np.empty((len(texts), PARAMS.num_perm), dtype=np.uint32)
    for i, text in enumerate(texts):
        m = rensa.RMinHash(num_perm=PARAMS.num_perm, seed=PARAMS.seed)
        m.update(list(map(str, shingles(text).tolist())))
        out[i] = m.digest()
    return out


def linked_pairs(sig: np.ndarray) -> set[tuple[int, int]]:
    """(kept file, removed file) for every file removed after the pipeline's LSH banding and components."""
    labels = components(len(sig), candidate_links(sig, PARAMS))
    return {(int(labels[i]), i) for i in range(len(sig)) if labels[i] != i}


def peak_rss_gib() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--planted", type=float, default=0.1, help="fraction of base files given a variant")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    workers = os.cpu_count() or 1
    lines = [f"Machine: {platform.node()}, {workers} cores, {platform.platform()}; date {date.today()}",
             f"Parameters: {PARAMS.describe()}", ""]

    sample, _ = make_corpus(3000, 0.0, seed=7)
    line_counts = [t.count("\n") for t in sample]
    ours = throughput(lambda t: signatures(t, PARAMS), sample)
    plain = throughput(plain_datasketch, sample[:300])
    bulk = throughput(bulk_datasketch, sample)
    fast = throughput(rensa_signatures, sample)
    same = bool((bulk_datasketch(sample[:500]) == signatures(sample[:500], PARAMS)).all())
    lines += ["| signature path (one core) | files/s | ratio to plain | ratio to bulk |", "|---|---:|---:|---:|",
              f"| datasketch plain: MinHash() + update() per shingle, SHA1 | {plain:,.0f} | 1.0 | {plain / bulk:.2f} |",
              f"| datasketch `MinHash.bulk` on the pipeline's shingles (affine32) | {bulk:,.0f} | {bulk / plain:.1f} | "
              f"1.00 |",
              f"| rensa {version('rensa')} `RMinHash` on the same shingles "
              f"| {fast:,.0f} | {fast / plain:.1f} | {fast / bulk:.2f} |",
              f"| pipeline: NumPy code tokens and shingle hashes, datasketch affine32 on whole arrays | {ours:,.0f} | "
              f"{ours / plain:.1f} | {ours / bulk:.2f} |",
              f"\nPipeline signatures equal to `MinHash.bulk`'s on 500 files: {same}. Every path but plain includes "
              "the pipeline's tokenising and shingling.",
              f"\nFiles of {min(line_counts)}-{max(line_counts)} lines (mean {np.mean(line_counts):.0f}).", ""]

    t0 = time.perf_counter()
    texts, planted = make_corpus(args.files, args.planted, seed=11)
    generated = time.perf_counter() - t0
    t0 = time.perf_counter()
    sig = signatures_parallel(texts, PARAMS, workers)
    t_sig = time.perf_counter() - t0
    links = candidate_links(sig, PARAMS)
    t_lsh = time.perf_counter() - t0 - t_sig
    labels = components(len(texts), links)
    t_all = time.perf_counter() - t0
    lines += [f"| end to end, {len(texts):,} files ({workers} processes) | seconds |", "|---|---:|",
              f"| signatures | {t_sig:.1f} |", f"| LSH banding + verified links (Polars) | {t_lsh:.1f} |",
              f"| connected components (Polars) | {t_all - t_sig - t_lsh:.1f} |", f"| total | {t_all:.1f} |",
              f"| peak memory (GiB, largest process) | {peak_rss_gib():.2f} |",
              f"\n(Generating the corpus took {generated:.0f} s and is not counted.)", ""]

    truth = [(a, b, jaccard(texts[a], texts[b])) for a, b, _ in planted]
    high = [(a, b) for a, b, j in truth if j >= 0.8]
    low = [(a, b) for a, b, j in truth if j < 0.5]
    found = sum(labels[a] == labels[b] for a, b in high)
    merged_low = sum(labels[a] == labels[b] for a, b in low)
    removed = [i for i in range(len(texts)) if labels[i] != i]
    checked = removed[:5000]
    correct = sum(jaccard(texts[i], texts[labels[i]]) >= 0.5 for i in checked)
    lines += ["| quality against planted truth | value |", "|---|---:|",
              f"| planted pairs | {len(truth):,} |",
              f"| recall at Jaccard >= 0.8 ({len(high):,} pairs) | {found / max(len(high), 1):.4f} |",
              f"| pairs under 0.5 wrongly merged ({len(low):,} pairs) | {merged_low} |",
              f"| removals ({len(removed):,}); precision: removed item >= 0.5 Jaccard to its kept one "
              f"(first {len(checked):,}) | {correct / max(len(checked), 1):.4f} |", ""]

    small = texts[:20_000]
    in_small = [(a, b) for a, b, j in truth if b < len(small) and j >= 0.8]
    found_by = {"pipeline": linked_pairs(signatures_parallel(small, PARAMS, workers)),
                "datasketch bulk": linked_pairs(bulk_datasketch(small)),
                "rensa": linked_pairs(rensa_signatures(small))}
    lines += [f"| same LSH banding on {len(small):,} files | (kept, removed) links | shared with pipeline's | "
              f"only pipeline's | only this path's | recall at Jaccard >= 0.8 ({len(in_small)} planted) |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, pairs in found_by.items():
        ref = found_by["pipeline"]
        groups = {}
        for root, i in pairs:
            groups.setdefault(root, set()).add(i)
        label = {i: root for root, members in groups.items() for i in members} | {r: r for r in groups}
        recall = sum(label.get(a, a) == label.get(b, b) for a, b in in_small) / max(len(in_small), 1)
        lines.append(f"| {name} | {len(pairs):,} | {len(pairs & ref):,} | {len(ref - pairs):,} | "
                     f"{len(pairs - ref):,} | {recall:.4f} |")
    lines.append("")
    one = components(len(small), candidate_links(signatures_parallel(small, PARAMS, workers), PARAMS))
    two = components(len(small), candidate_links(signatures_parallel(small, PARAMS, workers), PARAMS))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        base = {f"{i:08d}": t for i, t in enumerate(texts[:2000])}
        _, first = cached_signatures(store, base, PARAMS, workers)
        more = {**base, **{f"{i:08d}": t for i, t in enumerate(texts[2000:2100], start=2000)}}
        _, second = cached_signatures(store, more, PARAMS, workers)
    lines += [f"Two runs over {len(small):,} files: identical clusters: {bool((one == two).all())}.",
              f"Signature cache: {first} computed for 2,000 files; after adding 100 files, {second} computed."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
