"""Re-chunking to the stream buffer size."""

from __future__ import annotations

import numpy as np

from voxserve.audio import Rechunker, rechunk


def test_splits_and_merges_to_steady_chunks_with_a_small_first_one() -> None:
    rng = np.random.default_rng(0)
    pieces = [rng.standard_normal(int(n)).astype(np.float32) for n in rng.integers(1, 9000, 40)]
    chunker = Rechunker(4800, first_chunk_samples=1200)
    chunks: list[np.ndarray] = []
    for piece in pieces:
        chunks.extend(chunker.push(piece))
        assert chunker.pending < 4800
    tail = chunker.flush()
    assert tail is not None and 0 < len(tail) < 4800
    assert len(chunks[0]) == 1200
    assert all(len(c) == 4800 for c in chunks[1:])
    assert np.array_equal(np.concatenate([*chunks, tail]), np.concatenate(pieces))
    assert chunker.flush() is None


def test_generator_form_and_big_pushes() -> None:
    x = np.arange(10_000, dtype=np.float32)
    chunks = list(rechunk([x[:9000], x[9000:]], 2000, first_chunk_samples=500))
    assert [len(c) for c in chunks] == [500, 2000, 2000, 2000, 2000, 1500]
    assert np.array_equal(np.concatenate(chunks), x)
    chunks[1][0] = -1  # chunks are independent copies
    assert x[500] == 500
