"""Text `data` with the upstash-vector SDK: `upsert(vectors=[Data(...)])` (`/upsert-data`),
`query(data=...)` and `query_many` with `data` (`/query-data`) on a SPARSE index whose built-in
BM25 embeds the text, checked against BM25 computed here; and the dense index without a model
refusing text with an error that says what to do."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from upstash_vector import Vector
from upstash_vector.types import Data
from upstash_vector.errors import UpstashError
from upstash_vector.types import WeightingStrategy

STOPWORDS = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)

DOCS = {
    "d0": "The quick brown fox jumps over the lazy dog.",
    "d1": "A fox, a fox! Foxes and hounds: the fox runs.",
    "d2": "Brown bread and brown rice are staples.",
    "d3": "Lazy afternoons with a dog in the sun.",
    "d4": "Über-fast trains in Zürich run on time; 42 trains daily.",
    "d5": "snake_case names: quick_fix, brown_bear.",
    "d6": "Rice fields and bread ovens in the village.",
    "d7": "The hound chased the fox through the brown field.",
}


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[^\W_]+", text.lower()) if t not in STOPWORDS]


def term_id(term: str) -> int:
    """FNV-1a 32 of the term's UTF-8 bytes, as a signed 32-bit integer (the server's term id)."""
    h = 0x811C9DC5
    for b in term.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def weights_with(text: str, avg: float) -> dict[str, float]:
    toks = tokens(text)
    return {t: tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(toks) / avg)) for t, tf in Counter(toks).items()}


def bm25_weights(docs: dict[str, str]) -> dict[str, dict[str, float]]:
    avg = sum(len(tokens(t)) for t in docs.values()) / len(docs)
    out = {}
    for id_, text in docs.items():
        toks = tokens(text)
        out[id_] = {
            t: tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(toks) / avg)) for t, tf in Counter(toks).items()
        }
    return out


def expected(query: str, idf: bool = False) -> list[tuple[str, float]]:
    weights = bm25_weights(DOCS)
    terms = set(tokens(query))
    n = len(DOCS)
    scored = []
    for id_, w in weights.items():
        hit = [t for t in terms if t in w]
        if not hit:
            continue
        score = 0.0
        for t in hit:
            df = sum(1 for x in weights.values() if t in x)
            score += (math.log((n - df + 0.5) / (df + 0.5) + 1) if idf else 1.0) * w[t]
        scored.append((id_, score))
    scored.sort(key=lambda x: (-x[1], x[0]))
    return scored


@pytest.fixture(scope="module")
def text_index(sparse_index):
    sparse_index.reset()
    sparse_index.upsert(
        vectors=[Data(id=i, data=t, metadata={"n": int(i[1:])}) for i, t in DOCS.items()]
    )
    return sparse_index


def check(results, want, k):
    got = [(r.id, r.score) for r in results]
    assert len(got) == min(k, len(want)), (got, want)
    for (gid, gs), (wid, ws) in zip(got, want):
        assert abs(gs - ws) < 1e-5 * max(1.0, ws), (got, want)
    # Ids agree wherever the expected score is not tied.
    scores = [s for _, s in want[:k]]
    for wid, ws in want[:k]:
        if sum(1 for s in scores if abs(s - ws) < 1e-6) == 1:
            assert wid in [g for g, _ in got], (got, want)


@pytest.mark.parametrize(
    "query",
    ["quick brown fox", "lazy dog", "bread rice", "Zürich trains", "42", "brown", "the hound"],
)
def test_query_data_matches_bm25(text_index, query):
    res = text_index.query(data=query, top_k=5, include_metadata=True, include_data=True)
    check(res, expected(query), 5)
    for r in res:
        assert r.data == DOCS[r.id]
        assert r.metadata == {"n": int(r.id[1:])}


def test_idf_weighting_filter_and_batches(text_index):
    q = "brown fox"
    check(text_index.query(data=q, top_k=8, weighting_strategy=WeightingStrategy.IDF), expected(q, True), 8)
    res = text_index.query(data=q, top_k=8, filter="n >= 5")
    check(res, [x for x in expected(q) if int(x[0][1:]) >= 5], 8)
    many = text_index.query_many(queries=[{"data": "fox", "top_k": 2}, {"data": "rice", "top_k": 3}])
    check(many[0], expected("fox"), 2)
    check(many[1], expected("rice"), 3)
    # Only stopwords: nothing to search, no results.
    assert text_index.query(data="the of and", top_k=3) == []


def test_text_records_are_fetchable_with_their_bm25_vectors(text_index):
    [rec] = text_index.fetch(ids=["d1"], include_vectors=True, include_data=True)
    assert rec.data == DOCS["d1"]
    assert len(rec.sparse_vector.indices) == len(set(tokens(DOCS["d1"])))
    assert sorted(rec.sparse_vector.values) == pytest.approx(sorted(bm25_weights(DOCS)["d1"].values()), rel=1e-6)
    assert text_index.info().sparse_index.embedding_model == "BM25"


def test_every_sdk_form_weighs_with_the_running_mean_and_term_ids_are_fnv1a(sparse_index):
    """Tuples, dicts, `Vector` with only `data` and `Data` all go to /upsert-data; each batch is
    weighed with the mean term count of the namespace's records including the batch; deletes
    leave the mean; term ids are FNV-1a of the term."""
    ns = "forms"
    sparse_index.reset(namespace=ns)
    first = {"t1": "alpha beta beta", "t2": "Beta gamma, delta; epsilon!"}
    sparse_index.upsert(vectors=[("t1", first["t1"]), ("t2", first["t2"], {"k": 2})], namespace=ns)
    second = {"t3": "alpha", "t4": "gamma gamma gamma zeta", "t5": "eta"}
    sparse_index.upsert(
        vectors=[
            {"id": "t3", "data": second["t3"], "metadata": {"k": 3}},
            Vector(id="t4", data=second["t4"]),
            Data(id="t5", data=second["t5"]),
        ],
        namespace=ns,
    )
    avg1 = (3 + 4) / 2
    avg2 = (3 + 4 + 1 + 4 + 1) / 5
    want = {i: weights_with(t, avg1) for i, t in first.items()}
    want.update({i: weights_with(t, avg2) for i, t in second.items()})

    def check_stored(want):
        got = sparse_index.fetch(ids=sorted(want), include_vectors=True, include_metadata=True, namespace=ns)
        for rec in got:
            w = want[rec.id]
            ids = {term_id(t): v for t, v in w.items()}
            assert sorted(rec.sparse_vector.indices) == sorted(ids), (rec.id, rec.sparse_vector)
            for i, v in zip(rec.sparse_vector.indices, rec.sparse_vector.values):
                assert v == pytest.approx(ids[i], rel=1e-6), (rec.id, i)
        return got

    got = check_stored(want)
    assert [r.metadata for r in got] == [None, {"k": 2}, {"k": 3}, None, None]

    # A query: term presence, scores are the stored weights; include flags answer.
    res = sparse_index.query(data="GAMMA zeta", top_k=3, include_vectors=True, include_data=True, namespace=ns)
    assert [r.id for r in res] == ["t4", "t2"]
    assert res[0].score == pytest.approx(want["t4"]["gamma"] + want["t4"]["zeta"], rel=1e-6)
    assert res[1].score == pytest.approx(want["t2"]["gamma"], rel=1e-6)
    assert res[0].data == second["t4"] and res[0].sparse_vector is not None
    assert res[0].vector is None or res[0].vector == []

    # A delete takes the record's terms out of the mean: (3 + 4 + 1 + 1 + 2) / 5.
    sparse_index.delete(ids=["t4"], namespace=ns)
    sparse_index.upsert(vectors=[("t6", "zeta theta")], namespace=ns)
    check_stored({"t6": weights_with("zeta theta", (3 + 4 + 1 + 1 + 2) / 5)})

    # Batches of text queries in the namespace, with a filter.
    many = sparse_index.query_many(
        queries=[
            {"data": "alpha", "top_k": 5, "include_metadata": True},
            {"data": "alpha beta", "top_k": 5, "filter": "k >= 2"},
        ],
        namespace=ns,
    )
    assert [r.id for r in many[0]] == ["t3", "t1"]
    assert many[0][0].metadata == {"k": 3}
    scores = {"t2": want["t2"]["beta"], "t3": want["t3"]["alpha"]}
    assert [r.id for r in many[1]] == sorted(scores, key=lambda i: -scores[i])
    assert [r.score for r in many[1]] == pytest.approx(sorted(scores.values(), reverse=True), rel=1e-6)
    # Replacing a record by text counts its new text only.
    sparse_index.upsert(vectors=[("t5", "eta eta eta")], namespace=ns)
    check_stored({"t5": weights_with("eta eta eta", (3 + 4 + 1 + 3 + 2) / 5)})


def test_bad_text_is_refused(text_index):
    with pytest.raises(UpstashError, match="no terms"):
        text_index.upsert(vectors=[Data(id="x", data="to be or not to be")])


def test_dense_index_without_a_model_says_how_to_embed(index):
    how = r"no dense embedding model for text `data`: start flowvec-server with --model-dir \(all-MiniLM-L6-v2, 384-d; scripts/fetch-minilm fetches its files\)"
    with pytest.raises(UpstashError, match=how):
        index.upsert(vectors=[Data(id="t", data="some text")])
    with pytest.raises(UpstashError, match=how):
        index.query(data="question")
    with pytest.raises(UpstashError, match=how):
        index.upsert(vectors=[("t", "some text")])
