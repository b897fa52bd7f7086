"""Text `data` on a DENSE index with the built-in all-MiniLM-L6-v2 (`--model-dir`), through the
upstash-vector SDK: the server's embeddings of the dataset's dev passages are compared with the
vectors sentence-transformers made for them (`dev_queries.fvecs`), and text queries are checked
against an exact scan of the stored vectors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from upstash_vector.types import Data

REPO = Path(__file__).resolve().parents[2]
DIM = 384
N = 200  # dev passages upserted as text
NS = "minilm"


def dataset_dir() -> Path:
    candidates = [
        os.environ.get("FLOWVEC_DATASET"),
        str(REPO.parent / "shared" / "datasets" / "minilm-text"),
        "/work/shared/datasets/minilm-text",
    ]
    for c in candidates:
        if c and (Path(c) / "dev_passages.txt").is_file():
            return Path(c)
    pytest.fail(f"minilm-text dataset not found in {candidates} (set FLOWVEC_DATASET)", pytrace=False)


@pytest.fixture(scope="module")
def dev():
    data = dataset_dir()
    passages = (data / "dev_passages.txt").read_text(encoding="utf-8").splitlines()[:N]
    raw = np.fromfile(data / "dev_queries.fvecs", dtype=np.int32, count=N * (DIM + 1)).reshape(N, DIM + 1)
    assert (raw[:, 0] == DIM).all()
    return passages, raw[:, 1:].view(np.float32).copy()


@pytest.fixture(scope="module")
def loaded(minilm_index, dev):
    passages, _ = dev
    minilm_index.reset(namespace=NS)
    # Two SDK forms: (id, text) tuples and Data objects, in batches.
    for start in range(0, N, 50):
        batch = range(start, min(start + 50, N))
        if start % 100 == 0:
            minilm_index.upsert(vectors=[(f"p{i:03d}", passages[i]) for i in batch], namespace=NS)
        else:
            minilm_index.upsert(
                vectors=[Data(id=f"p{i:03d}", data=passages[i], metadata={"i": i}) for i in batch],
                namespace=NS,
            )
    fetched = minilm_index.fetch(ids=[f"p{i:03d}" for i in range(N)], include_vectors=True, include_data=True, namespace=NS)
    return np.array([f.vector for f in fetched], dtype=np.float32), [f.data for f in fetched]


def test_stored_vectors_match_sentence_transformers(loaded, dev):
    passages, reference = dev
    stored, data = loaded
    assert data == passages  # the text is kept as `data`
    cos = (stored * reference).sum(1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(reference, axis=1))
    worst = int(cos.argmin())
    assert cos.min() >= 0.999, f"passage {worst}: cosine {cos.min()}"


def test_text_queries_rank_as_an_exact_scan_of_the_stored_vectors(minilm_index, loaded, dev):
    passages, _ = dev
    stored, _ = loaded
    unit = stored / np.linalg.norm(stored, axis=1, keepdims=True)
    for q in (0, 17, 123, 199):
        got = minilm_index.query(data=passages[q], top_k=10, namespace=NS)
        # The query's own passage is the nearest: the same text embeds to the same vector.
        assert got[0].id == f"p{q:03d}"
        assert got[0].score == pytest.approx(1.0, abs=1e-5)
        exact = np.argsort(-(unit @ unit[q]), kind="stable")[:10]
        want = {f"p{i:03d}" for i in exact}
        assert len(want & {r.id for r in got}) >= 9, (q, [r.id for r in got], sorted(want))
        # Scores are the cosine of the text's embedding to each stored vector, (1 + cos) / 2.
        for r in got:
            i = int(r.id[1:])
            assert r.score == pytest.approx((1 + float(unit[i] @ unit[q])) / 2, abs=1e-4)


def test_batch_text_queries_and_a_filter(minilm_index, loaded, dev):
    passages, _ = dev
    many = minilm_index.query_many(
        queries=[
            {"data": passages[5], "top_k": 1},
            {"data": passages[60], "top_k": 1, "filter": "i >= 50"},
        ],
        namespace=NS,
    )
    assert [r[0].id for r in many] == ["p005", "p060"]


def test_resumable_text_query(minilm_index, loaded, dev):
    passages, _ = dev
    first, handle = minilm_index.resumable_query(data=passages[42], top_k=5, namespace=NS)
    try:
        assert first[0].id == "p042"
        more = handle.fetch_next(5)
        ids = [r.id for r in first] + [r.id for r in more]
        assert len(set(ids)) == 10
        assert all(a.score >= b.score for a, b in zip(first + more, (first + more)[1:]))
    finally:
        handle.stop()
