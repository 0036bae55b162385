"""Stable hashes: a categorical value's hash bucket, and each row's split from a seeded 64-bit hash of its content
(or its id), so the split never depends on the host, the file or the row's position."""

from __future__ import annotations

import numpy as np
import pandas as pd

from containerlib.names import SPLITS
from containerlib.stable_hash import stable_hash64

SPLIT_CODES = {name: code for code, name in enumerate(SPLITS)}
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


UINT64_MASK = 0xFFFFFFFFFFFFFFFF


def rng_entropy(seed: int) -> int:
    """``--seed`` as a random generator's entropy: any int64 (SplitSeed is SageMaker's Integer parameter, which
    takes negative values) as its unsigned 64 bits; numpy's generators refuse negative seeds."""
    return seed & UINT64_MASK


def hash_texts(values: pd.Series, seed: int) -> np.ndarray:
    key = seed.to_bytes(8, "little", signed=True)
    codes, uniques = pd.factorize(values.astype(str).str.strip())
    hashed = np.array([stable_hash64(str(value), key) for value in uniques], dtype=np.uint64)
    return _mix(hashed[codes])


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def row_hashes(features: np.ndarray, labels: np.ndarray, seed: int) -> np.ndarray:
    """A seeded 64-bit hash of each row's float32 features and label, independent of host, file and position.

    Column after column, h = mix(h ^ bits(value)), SplitMix64's finaliser, in place on two arrays the length of the
    chunk: no temporaries allocated per step."""
    n = len(labels)
    h = _mix(np.full(n, np.uint64(rng_entropy(seed)), dtype=np.uint64))
    bits, scratch = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.uint64)
    for column in (*features.T, labels):
        np.add(column, np.float32(0.0), out=bits)  # + 0.0 turns -0.0 into 0.0, so equal numbers hash equally
        np.bitwise_xor(h, bits.view(np.uint32), out=h)
        _mix_in_place(h, scratch)
    return h


def _mix_in_place(h: np.ndarray, scratch: np.ndarray) -> None:
    """:func:`_mix` overwriting ``h``, with ``scratch`` (same length) as its only temporary."""
    np.right_shift(h, np.uint64(30), out=scratch)
    h ^= scratch
    h *= _M1
    np.right_shift(h, np.uint64(27), out=scratch)
    h ^= scratch
    h *= _M2
    np.right_shift(h, np.uint64(31), out=scratch)
    h ^= scratch


def assign_splits(hashes: np.ndarray, fractions: tuple[float, float, float]) -> np.ndarray:
    """Split code per row from the top 53 bits of its hash: a uniform number compared with the fractions."""
    uniform = (hashes >> np.uint64(11)).astype(np.float64) * 2.0**-53
    train, validation, _ = fractions
    return np.where(uniform < train, 0, np.where(uniform < train + validation, 1, 2)).astype(np.uint8)
