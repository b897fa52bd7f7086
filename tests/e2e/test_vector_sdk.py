"""End-to-end: the PyPI `upstash-vector` 0.8.0 client against `flowvec-server` (`server/`).

ASSUMPTION: the server serves one **dense COSINE index of dimension 8** (the example server's
default; `run_e2e.sh` passes `--dimension 8 --metric COSINE`). Every test checks the server's
answers against an exact brute force computed here in float64 over the float32 vectors sent, with
DESIGN §2.2 semantics: score `(1 + cos) / 2`, highest first, ties by id ascending, filtered queries
return `min(topK, matches)` results.

The module starts with `reset(all=True)` so a long-lived server gives the same results. Read-only
tests share the seeded default namespace and namespace `other`; mutating tests use their own
namespaces.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest
from upstash_vector import Index, Vector
from upstash_vector.types import Data
from upstash_vector.errors import UpstashError
from upstash_vector.types import MetadataUpdateMode, SparseVector

DIM = 8
N_MAIN = 200
N_OTHER = 50
SEED = 20261122
# Server computes in f32, we in f64: scores agree to ~1e-6; leave room.
SCORE_TOL = 1e-5
OTHER_NS = "other"


# ---------------------------------------------------------------------------------------------
# Data and oracle


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    # float32 so what we send is exactly what an f32 server stores.
    return rng.standard_normal((n, DIM)).astype(np.float32)


def _metadata(i: int, rng: np.random.Generator) -> dict:
    return {
        "group": i % 4,
        "name": f"n{i:03d}",
        "even": i % 2 == 0,
        "x": round(float(rng.uniform(0.0, 1.0)), 3),
        "tags": [f"t{i % 3}", "all"],
        "nested": {"k": i % 5},
    }


class Corpus:
    """Records of one namespace as the test upserted them."""

    def __init__(self, prefix: str, n: int, rng: np.random.Generator) -> None:
        self.ids = [f"{prefix}{i:03d}" for i in range(n)]
        self.vecs = _vectors(rng, n)
        self.meta = {id_: _metadata(i, rng) for i, id_ in enumerate(self.ids)}
        self.data = {id_: f"doc {id_}" for id_ in self.ids}

    def vector(self, id_: str) -> list[float]:
        return self.vecs[self.ids.index(id_)].tolist()

    def scores(self, q: np.ndarray) -> dict[str, float]:
        return cosine_scores(self.ids, self.vecs, q)


def cosine_scores(ids: list[str], vecs: np.ndarray, q: np.ndarray) -> dict[str, float]:
    v = vecs.astype(np.float64)
    q64 = np.asarray(q, dtype=np.float64)
    cos = v @ q64 / (np.linalg.norm(v, axis=1) * np.linalg.norm(q64))
    return {id_: float((1.0 + c) / 2.0) for id_, c in zip(ids, cos)}


def expected_top(scores: dict[str, float], k: int, allow: Callable[[str], bool] = lambda _: True):
    ranked = sorted((i for i in scores if allow(i)), key=lambda i: (-scores[i], i))
    return ranked[:k]


def check_results(results, scores: dict[str, float], k: int, allow=lambda _: True) -> None:
    """Results equal the exact top-k: count, per-id score, order, and membership.

    Membership may differ from the oracle only among ids whose exact scores are within SCORE_TOL
    of the k-th score (f32 vs f64 rounding can swap near-ties at the boundary); the order check
    (score descending, ties by id ascending) is done on the server's own scores.
    """
    want = expected_top(scores, k, allow)
    got = [r.id for r in results]
    assert len(got) == len(want), f"expected {len(want)} results, got {len(got)}: {got}"
    assert len(set(got)) == len(got), f"duplicate ids in results: {got}"
    for r in results:
        assert r.id in scores, f"result id {r.id!r} was never upserted in this namespace"
        assert allow(r.id), f"result {r.id!r} does not match the filter"
        assert math.isclose(r.score, scores[r.id], abs_tol=SCORE_TOL), (
            f"score of {r.id}: server {r.score}, exact {scores[r.id]}"
        )
    for a, b in zip(results, results[1:]):
        assert a.score > b.score or (a.score == b.score and a.id < b.id), (
            f"order broken between {a.id} ({a.score}) and {b.id} ({b.score})"
        )
    if want:
        kth = scores[want[-1]]
        for id_ in set(want) ^ set(got):
            assert abs(scores[id_] - kth) <= SCORE_TOL, (
                f"{id_} (exact score {scores[id_]}) wrongly {'missing' if id_ in want else 'present'}; "
                f"k-th exact score {kth}"
            )


def assert_vector_close(got, want) -> None:
    assert got is not None, "vector missing although includeVectors was true"
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert math.isclose(g, w, rel_tol=1e-5, abs_tol=1e-6), f"vector {got} != upserted {want}"


# Filters in the server's language, each with the same predicate in Python.
FILTERS: list[tuple[str, Callable[[dict], bool]]] = [
    ("group = 1", lambda m: m["group"] == 1),
    ("group != 1 AND x >= 0.5", lambda m: m["group"] != 1 and m["x"] >= 0.5),
    ("name GLOB 'n1*'", lambda m: m["name"].startswith("n1")),
    ("tags CONTAINS 't2' OR nested.k = 4", lambda m: "t2" in m["tags"] or m["nested"]["k"] == 4),
    ("group IN (0, 3) AND even = true", lambda m: m["group"] in (0, 3) and m["even"]),
    ("HAS FIELD nested AND x < 0.25", lambda m: m["x"] < 0.25),
    ("(group = 2 OR group = 3) AND missing_field = 1", lambda m: False),
    ("name NOT IN ('n000', 'n001') AND x > 0.9", lambda m: m["name"] not in ("n000", "n001") and m["x"] > 0.9),
]


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


@pytest.fixture(scope="module")
def seeded(index: Index, rng: np.random.Generator):
    """Empty the whole index, then upsert the main corpus and namespace `other`."""
    index.reset(all=True)
    info = index.info()
    assert info.vector_count == 0, f"reset(all=True) left {info.vector_count} vectors"

    main = Corpus("v", N_MAIN, rng)
    # Cover the SDK's three input forms: tuples, dicts and Vector objects.
    batch_tuples = [(i, main.vector(i), main.meta[i], main.data[i]) for i in main.ids[:70]]
    batch_dicts = [
        {"id": i, "vector": main.vecs[main.ids.index(i)], "metadata": main.meta[i], "data": main.data[i]}
        for i in main.ids[70:140]
    ]
    batch_objs = [
        Vector(id=i, vector=main.vector(i), metadata=main.meta[i], data=main.data[i])
        for i in main.ids[140:]
    ]
    for batch in (batch_tuples, batch_dicts, batch_objs):
        index.upsert(vectors=batch)

    other = Corpus("o", N_OTHER, rng)
    index.upsert(
        vectors=[(i, other.vector(i), other.meta[i], other.data[i]) for i in other.ids],
        namespace=OTHER_NS,
    )
    return main, other


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    return _vectors(np.random.default_rng(SEED + 1), 6)


# ---------------------------------------------------------------------------------------------
# Query


def test_query_single_matches_brute_force(index, seeded, queries):
    main, _ = seeded
    for q in queries:
        for k in (1, 10, 37):
            res = index.query(vector=q.tolist(), top_k=k)
            check_results(res, main.scores(q), k)


def test_query_accepts_numpy_and_returns_all_records_for_large_top_k(index, seeded, queries):
    main, _ = seeded
    res = index.query(vector=queries[0], top_k=N_MAIN + 50)
    check_results(res, main.scores(queries[0]), N_MAIN + 50)
    assert len(res) == N_MAIN


def test_query_include_flags_absent_by_default(index, seeded, queries):
    res = index.query(vector=queries[1].tolist(), top_k=5)
    assert len(res) == 5
    for r in res:
        assert r.vector is None and r.metadata is None and r.data is None, r


def test_query_include_flags_return_what_was_upserted(index, seeded, queries):
    main, _ = seeded
    res = index.query(
        vector=queries[2].tolist(), top_k=8, include_vectors=True, include_metadata=True, include_data=True
    )
    check_results(res, main.scores(queries[2]), 8)
    for r in res:
        assert_vector_close(r.vector, main.vector(r.id))
        assert r.metadata == main.meta[r.id]
        assert r.data == main.data[r.id]
    only_meta = index.query(vector=queries[2].tolist(), top_k=3, include_metadata=True)
    for r in only_meta:
        assert r.metadata == main.meta[r.id] and r.vector is None and r.data is None


def test_query_identical_vector_scores_one(index, seeded):
    main, _ = seeded
    res = index.query(vector=main.vector("v042"), top_k=1)
    assert [r.id for r in res] == ["v042"]
    assert math.isclose(res[0].score, 1.0, abs_tol=SCORE_TOL)


@pytest.mark.parametrize("expr,pred", FILTERS, ids=[f for f, _ in FILTERS])
def test_query_filter_matches_brute_force(index, seeded, queries, expr, pred):
    main, _ = seeded
    allow = lambda i: pred(main.meta[i])  # noqa: E731
    n_match = sum(1 for i in main.ids if allow(i))
    for k in (5, 1000):
        res = index.query(vector=queries[3].tolist(), top_k=k, filter=expr, include_metadata=True)
        check_results(res, main.scores(queries[3]), k, allow)
        assert len(res) == min(k, n_match)


def test_query_bad_filter_is_an_error(index, seeded, queries):
    with pytest.raises(UpstashError):
        index.query(vector=queries[0].tolist(), filter="group = = 1")
    with pytest.raises(UpstashError):
        index.query(vector=queries[0].tolist(), filter="city = x")  # bare word is not a literal


def test_query_many_batch_in_order(index, seeded, queries):
    main, _ = seeded
    res = index.query_many(
        queries=[
            {"vector": queries[0].tolist(), "top_k": 3},
            {"vector": queries[1].tolist(), "top_k": 12, "include_metadata": True, "filter": "group = 2"},
            {"vector": queries[2].tolist()},  # topK absent: default 10
        ]
    )
    assert len(res) == 3
    check_results(res[0], main.scores(queries[0]), 3)
    check_results(res[1], main.scores(queries[1]), 12, lambda i: main.meta[i]["group"] == 2)
    for r in res[1]:
        assert r.metadata == main.meta[r.id]
    check_results(res[2], main.scores(queries[2]), 10)
    for r in res[0] + res[2]:
        assert r.metadata is None


def test_query_many_single_query(index, seeded, queries):
    main, _ = seeded
    res = index.query_many(queries=[{"vector": queries[4].tolist(), "top_k": 4}])
    assert len(res) == 1
    check_results(res[0], main.scores(queries[4]), 4)


def test_query_namespace_is_isolated(index, seeded, queries):
    main, other = seeded
    res = index.query(vector=queries[5].tolist(), top_k=20, namespace=OTHER_NS, include_data=True)
    check_results(res, other.scores(queries[5]), 20)
    assert all(r.id.startswith("o") and r.data == other.data[r.id] for r in res)
    batch = index.query_many(
        queries=[{"vector": queries[0].tolist(), "top_k": 5}, {"vector": queries[1].tolist(), "top_k": 5}],
        namespace=OTHER_NS,
    )
    check_results(batch[0], other.scores(queries[0]), 5)
    check_results(batch[1], other.scores(queries[1]), 5)


def test_query_ties_break_by_id_ascending(index, seeded):
    ns = "ties"
    v = _vectors(np.random.default_rng(SEED + 3), 1)[0].tolist()
    dup_ids = ["t-e", "t-b", "t-d", "t-a", "t-c"]
    far = [(-x) for x in v]
    index.upsert(vectors=[(i, v) for i in dup_ids] + [("t-far", far)], namespace=ns)
    res = index.query(vector=v, top_k=6, namespace=ns)
    assert [r.id for r in res] == ["t-a", "t-b", "t-c", "t-d", "t-e", "t-far"]
    assert len({r.score for r in res[:5]}) == 1, [r.score for r in res]
    assert math.isclose(res[5].score, 0.0, abs_tol=SCORE_TOL)


# ---------------------------------------------------------------------------------------------
# Fetch / range / info / namespaces


def test_fetch_by_ids_keeps_order_and_marks_missing(index, seeded):
    main, _ = seeded
    res = index.fetch(["v010", "missing", "v005"], include_vectors=True, include_metadata=True, include_data=True)
    assert len(res) == 3
    assert res[1] is None
    for got, id_ in ((res[0], "v010"), (res[2], "v005")):
        assert got is not None and got.id == id_
        assert_vector_close(got.vector, main.vector(id_))
        assert got.metadata == main.meta[id_]
        assert got.data == main.data[id_]
    bare = index.fetch("v007")
    assert len(bare) == 1 and bare[0].id == "v007"
    assert bare[0].vector is None and bare[0].metadata is None and bare[0].data is None


def test_fetch_respects_namespace(index, seeded):
    res = index.fetch(["o001", "v001"], namespace=OTHER_NS, include_metadata=True)
    assert res[0] is not None and res[0].id == "o001"
    assert res[1] is None


def test_fetch_by_prefix(index, seeded):
    main, _ = seeded
    res = index.fetch(prefix="v01", include_metadata=True)
    assert sorted(r.id for r in res) == [f"v01{d}" for d in range(10)]
    for r in res:
        assert r.metadata == main.meta[r.id]


def _range_all(index: Index, namespace: str = "", limit: int = 17, prefix=None, **flags):
    ids, records, cursor, pages = [], [], "", 0
    while True:
        page = index.range(cursor=cursor, limit=limit, namespace=namespace, prefix=prefix, **flags)
        assert len(page.vectors) <= limit
        records.extend(page.vectors)
        ids.extend(v.id for v in page.vectors)
        pages += 1
        assert pages <= 1000, "range does not terminate"
        if page.next_cursor == "":
            return ids, records
        assert isinstance(page.next_cursor, str)
        cursor = page.next_cursor


def test_range_paginates_over_exactly_the_upserted_set(index, seeded):
    main, other = seeded
    ids, records = _range_all(index, include_metadata=True, include_data=True)
    assert len(ids) == len(set(ids)), "range returned an id twice"
    assert set(ids) == set(main.ids)
    for r in records:
        assert r.metadata == main.meta[r.id] and r.data == main.data[r.id]
    again, _ = _range_all(index)
    assert again == ids, "range order is not stable"
    ids_other, _ = _range_all(index, namespace=OTHER_NS, limit=7)
    assert sorted(ids_other) == sorted(other.ids)


def test_range_with_prefix_and_vectors(index, seeded):
    main, _ = seeded
    ids, records = _range_all(index, prefix="v1", limit=9, include_vectors=True)
    assert sorted(ids) == [i for i in main.ids if i.startswith("v1")]
    for r in records:
        assert_vector_close(r.vector, main.vector(r.id))


def test_range_single_page_has_empty_cursor(index, seeded):
    page = index.range(cursor="", limit=N_OTHER + 10, namespace=OTHER_NS)
    assert len(page.vectors) == N_OTHER
    assert page.next_cursor == ""


def test_info_counts_dimension_and_metric(index, seeded):
    info = index.info()
    assert info.dimension == DIM
    assert info.similarity_function == "COSINE"
    assert info.pending_vector_count == 0
    assert isinstance(info.index_size, int) and info.index_size >= 0
    assert info.namespaces[""].vector_count == N_MAIN
    assert info.namespaces[OTHER_NS].vector_count == N_OTHER
    assert info.vector_count == sum(ns.vector_count for ns in info.namespaces.values())


def test_list_namespaces(index, seeded):
    names = index.list_namespaces()
    assert "" in names and OTHER_NS in names
    assert len(names) == len(set(names))


def test_delete_namespace(index, seeded):
    ns = "doomed"
    index.upsert(vectors=[("d1", [1.0] * DIM)], namespace=ns)
    assert ns in index.list_namespaces()
    index.delete_namespace(ns)
    assert ns not in index.list_namespaces()
    assert ns not in index.info().namespaces
    with pytest.raises(UpstashError):
        index.delete_namespace(ns)  # no such namespace: an error, per the SDK's contract


# ---------------------------------------------------------------------------------------------
# Mutations (own namespaces)


def _fresh(index: Index, ns: str, corpus: Corpus) -> None:
    # The module began with reset(all=True), so `ns` starts empty.
    index.upsert(vectors=[(i, corpus.vector(i), corpus.meta[i], corpus.data[i]) for i in corpus.ids], namespace=ns)


def test_delete_by_ids_prefix_and_filter(index, seeded, queries):
    ns = "del"
    c = Corpus("v", 120, np.random.default_rng(SEED + 2))
    _fresh(index, ns, c)
    alive = set(c.ids)

    assert index.delete(["v000", "v001", "nope"], namespace=ns).deleted == 2
    alive -= {"v000", "v001"}
    assert index.delete("v002", namespace=ns).deleted == 1
    alive.discard("v002")

    want = sum(1 for i in alive if i.startswith("v10"))
    assert index.delete(prefix="v10", namespace=ns).deleted == want == 10
    alive = {i for i in alive if not i.startswith("v10")}

    pred = lambda i: c.meta[i]["group"] == 3 and c.meta[i]["x"] < 0.5  # noqa: E731
    want = sum(1 for i in alive if pred(i))
    assert want > 0
    assert index.delete(filter="group = 3 AND x < 0.5", namespace=ns).deleted == want
    alive = {i for i in alive if not pred(i)}

    ids, _ = _range_all(index, namespace=ns)
    assert set(ids) == alive
    assert index.info().namespaces[ns].vector_count == len(alive)
    keep = [i for i in c.ids if i in alive]
    scores = cosine_scores(keep, np.stack([c.vecs[c.ids.index(i)] for i in keep]), queries[0])
    check_results(index.query(vector=queries[0].tolist(), top_k=15, namespace=ns), scores, 15)
    assert index.delete(["v000"], namespace=ns).deleted == 0


def test_upsert_replaces_whole_record(index, seeded):
    ns = "replace"
    index.upsert(vectors=[("r1", [1.0] + [0.0] * (DIM - 1), {"a": 1}, "first")], namespace=ns)
    index.upsert(vectors=[("r1", [0.0, 1.0] + [0.0] * (DIM - 2))], namespace=ns)
    got = index.fetch("r1", namespace=ns, include_vectors=True, include_metadata=True, include_data=True)[0]
    assert_vector_close(got.vector, [0.0, 1.0] + [0.0] * (DIM - 2))
    assert got.metadata is None and got.data is None
    assert index.info().namespaces[ns].vector_count == 1


def test_update_metadata_patch_overwrite_and_vector(index, seeded):
    ns = "upd"
    e0 = [1.0] + [0.0] * (DIM - 1)
    e1 = [0.0, 1.0] + [0.0] * (DIM - 2)
    index.upsert(vectors=[("u1", e0, {"a": 1, "b": {"c": 2, "d": 3}}, "text"), ("u2", e1)], namespace=ns)

    assert index.update("u1", metadata={"b": {"c": None, "e": 5}, "f": True},
                        metadata_update_mode=MetadataUpdateMode.PATCH, namespace=ns) is True
    got = index.fetch("u1", namespace=ns, include_metadata=True, include_data=True)[0]
    assert got.metadata == {"a": 1, "b": {"d": 3, "e": 5}, "f": True}  # RFC 7396 merge patch
    assert got.data == "text"

    assert index.update("u1", metadata={"z": 0}, namespace=ns) is True  # OVERWRITE is the default
    assert index.fetch("u1", namespace=ns, include_metadata=True)[0].metadata == {"z": 0}

    assert index.update("u1", vector=e1, namespace=ns) is True
    res = index.query(vector=e1, top_k=2, namespace=ns)
    assert [r.id for r in res] == ["u1", "u2"]
    assert all(math.isclose(r.score, 1.0, abs_tol=SCORE_TOL) for r in res)

    assert index.update("missing", metadata={"a": 1}, namespace=ns) is False


def test_reset_one_namespace_leaves_others(index, seeded):
    main, other = seeded
    ns = "tmp"
    index.upsert(vectors=[("t1", [1.0] * DIM), ("t2", [2.0] * DIM)], namespace=ns)
    assert index.info().namespaces[ns].vector_count == 2
    index.reset(namespace=ns)
    info = index.info()
    assert info.namespaces.get(ns) is None or info.namespaces[ns].vector_count == 0
    assert info.namespaces[""].vector_count == N_MAIN
    assert info.namespaces[OTHER_NS].vector_count == N_OTHER


# ---------------------------------------------------------------------------------------------
# Errors the SDK must surface as UpstashError (JSON error envelope)


def test_wrong_dimension_is_rejected(index, seeded):
    with pytest.raises(UpstashError, match=r"(?i)dimension"):
        index.upsert(vectors=[("bad", [1.0, 2.0])], namespace="errs")
    with pytest.raises(UpstashError, match=r"(?i)dimension"):
        index.query(vector=[1.0, 2.0, 3.0])
    errs = index.info().namespaces.get("errs")
    assert errs is None or errs.vector_count == 0


def test_sparse_part_on_dense_index_is_rejected(index, seeded):
    with pytest.raises(UpstashError):
        index.upsert(vectors=[("sp", SparseVector([1, 2], [0.5, 0.5]))], namespace="errs")
    with pytest.raises(UpstashError):
        index.upsert(vectors=[Vector(id="hy", vector=[1.0] * DIM, sparse_vector=([1], [1.0]))], namespace="errs")


def test_zero_vector_is_rejected_for_cosine(index, seeded):
    with pytest.raises(UpstashError):
        index.upsert(vectors=[("zero", [0.0] * DIM)], namespace="errs")


def test_unsupported_routes_answer_json_errors(index, seeded):
    # Hosted-embedding routes (/upsert-data, /query-data) are not served; the SDK still needs a
    # JSON error body to raise UpstashError (a bare 404 page would raise JSONDecodeError).
    with pytest.raises(UpstashError):
        index.upsert(vectors=[Data(id="text", data="hello world")], namespace="errs")
    with pytest.raises(UpstashError):
        index.query(data="hello world")


def test_wrong_token_is_rejected(base_url, seeded):
    bad = Index(url=base_url, token="not-the-token", retries=0)
    with pytest.raises(UpstashError):
        bad.info()
    with pytest.raises(UpstashError):
        bad.query(vector=[1.0] * DIM)
