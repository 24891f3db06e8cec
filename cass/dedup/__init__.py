"""Duplicates: MinHash signatures and LSH (minhash), exact and near-duplicate removal of the corpus (corpus)."""
