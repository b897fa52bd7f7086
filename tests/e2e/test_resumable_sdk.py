"""End-to-end: resumable queries of the PyPI `upstash-vector` 0.8.0 client
(`index.resumable_query`, `handle.fetch_next`, `handle.stop`) against `flowvec-server`.

Two servers:
- the shared one `run_e2e.sh` starts (dense COSINE, dimension 8): paging with a filter against a
  float64 exact scan, what pages see while writers run (see `src/vector/resumable.rs`), 404 after
  `stop()` and for an unknown uuid, expiry after a short `maxIdle`, bad `maxIdle` (400);
- one this module starts (dense COSINE, dimension 384, `--resumable-max-open 4`) over the first
  5,000 rows of the minilm-text dataset (above the 4,000 where `/query` switches to its graph):
  paging through 1,000 results of dev queries, and a whole namespace, against a float64 exact
  scan; and the cap (429).

The dataset is looked up at `FLOWVEC_DATASET`, else `../shared/datasets/minilm-text` beside the
repository, else `/work/shared/datasets/minilm-text`; without it the 384-d tests are skipped,
saying why. The server binary is `target/release/flowvec-server` (built by `run_e2e.sh`), or
`FLOWVEC_SERVER_BIN`.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from upstash_vector import Index
from upstash_vector.errors import UpstashError

from conftest import raw_request

REPO = Path(__file__).resolve().parents[2]
SCORE_TOL = 1e-5
DIM_SMALL = 8
DIM_BIG = 384
N_BIG = 5000
CAP = 4
NS = "resumable"


# ---------------------------------------------------------------------------------------------
# Oracle


def cosine_scores(ids: list[str], vecs: np.ndarray, q: np.ndarray) -> dict[str, float]:
    v = vecs.astype(np.float64)
    q64 = np.asarray(q, dtype=np.float64)
    cos = v @ q64 / (np.linalg.norm(v, axis=1) * np.linalg.norm(q64))
    return {id_: float((1.0 + c) / 2.0) for id_, c in zip(ids, cos)}


def check_ranking(results, scores: dict[str, float], n: int) -> None:
    """`results` are the exact top `n` of `scores`: count, no duplicates, every score within
    SCORE_TOL of the exact one and of the exact n-th best at its position, order by the server's
    scores (ties by id), membership up to near-ties at the boundary (f32 vs f64 rounding)."""
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    want = ranked[:n]
    got = [r.id for r in results]
    assert len(got) == len(want), f"expected {len(want)} results, got {len(got)}"
    assert len(set(got)) == len(got), "duplicate ids across pages"
    for pos, r in enumerate(results):
        assert r.id in scores, f"{r.id!r} is not in this namespace"
        assert math.isclose(r.score, scores[r.id], abs_tol=SCORE_TOL), (
            f"score of {r.id}: server {r.score}, exact {scores[r.id]}"
        )
        assert math.isclose(r.score, scores[want[pos]], abs_tol=SCORE_TOL), (
            f"position {pos}: server {r.id} {r.score}, exact {want[pos]} {scores[want[pos]]}"
        )
    for a, b in zip(results, results[1:]):
        assert a.score > b.score or (a.score == b.score and a.id < b.id), (
            f"order broken between {a.id} ({a.score}) and {b.id} ({b.score})"
        )
    if want:
        nth = scores[want[-1]]
        for id_ in set(want) ^ set(got):
            assert abs(scores[id_] - nth) <= SCORE_TOL, f"{id_} wrongly in or out of the top {n}"


def page_through(handle, first: list, total: int, page: int) -> list:
    results = list(first)
    while len(results) < total:
        more = handle.fetch_next(min(page, total - len(results)))
        assert more, f"exhausted after {len(results)} of {total}"
        results.extend(more)
    return results


def not_found(call) -> str:
    with pytest.raises(UpstashError) as err:
        call()
    assert "not found" in str(err.value), str(err.value)
    return str(err.value)


# ---------------------------------------------------------------------------------------------
# The shared 8-d server


@pytest.fixture(scope="module")
def small(index: Index):
    """300 records in namespace `resumable`, with metadata `group` (0..3)."""
    rng = np.random.default_rng(20261125)
    ids = [f"s{i:03d}" for i in range(300)]
    vecs = rng.standard_normal((300, DIM_SMALL)).astype(np.float32)
    index.reset(namespace=NS)
    index.upsert(
        vectors=[(i, v.tolist(), {"group": n % 4}) for n, (i, v) in enumerate(zip(ids, vecs))],
        namespace=NS,
    )
    queries = rng.standard_normal((3, DIM_SMALL)).astype(np.float32)
    return ids, vecs, queries


def test_pages_equal_an_exact_scan(index, small):
    ids, vecs, queries = small
    for q in queries:
        scores = cosine_scores(ids, vecs, q)
        for first_k, page in [(1, 1), (10, 7), (100, 300)]:
            first, handle = index.resumable_query(
                vector=q.tolist(), top_k=first_k, namespace=NS, max_idle=60
            )
            with handle:
                assert len(first) == first_k
                results = page_through(handle, first, 300, page)
                assert handle.fetch_next(5) == [], "exhausted"
            check_ranking(results, scores, 300)


def test_filtered_pages_with_metadata(index, small):
    ids, vecs, queries = small
    groups = {i: n % 4 for n, i in enumerate(ids)}
    scores = {i: s for i, s in cosine_scores(ids, vecs, queries[0]).items() if groups[i] != 2}
    first, handle = index.resumable_query(
        vector=queries[0].tolist(),
        top_k=20,
        filter="group != 2",
        include_metadata=True,
        namespace=NS,
        max_idle=60,
    )
    with handle:
        results = page_through(handle, first, len(scores), 40)
        assert handle.fetch_next(40) == []
    check_ranking(results, scores, len(scores))
    assert all(r.metadata == {"group": groups[r.id]} for r in results)


def test_pages_see_deletes_not_inserts_and_current_metadata(index):
    ns = "resumable-writes"
    index.reset(namespace=ns)
    # r00 nearest to [1, 0, ...], then r01, ...
    def vec(i: float) -> list[float]:
        return [1.0, i / 10.0] + [0.0] * (DIM_SMALL - 2)

    index.upsert(vectors=[(f"r{i:02d}", vec(i), {"v": 0}) for i in range(30)], namespace=ns)
    first, handle = index.resumable_query(
        vector=vec(0), top_k=5, include_metadata=True, namespace=ns, max_idle=60
    )
    with handle:
        assert [r.id for r in first] == ["r00", "r01", "r02", "r03", "r04"]
        index.delete(ids=["r05", "r20", "r02"], namespace=ns)  # r02 was shown already
        index.upsert(vectors=[("new", vec(0), {"v": 0})], namespace=ns)  # not ranked
        index.update(id="r10", metadata={"v": 1}, namespace=ns)  # keeps its rank
        index.upsert(vectors=[("r12", vec(29), {"v": 2})], namespace=ns)  # moved: keeps its rank
        rest = page_through(handle, [], 25 - 2, 6)
        assert handle.fetch_next(6) == []
    want = [f"r{i:02d}" for i in range(5, 30) if i not in (5, 20)]
    assert [r.id for r in rest] == want
    meta = {r.id: r.metadata for r in rest}
    assert meta["r10"] == {"v": 1} and meta["r12"] == {"v": 2} and meta["r11"] == {"v": 0}
    scores = [r.score for r in rest]
    assert scores == sorted(scores, reverse=True), "start scores, in order"


def test_stop_and_unknown_uuid_answer_404(index, small, token):
    ids, _, queries = small
    first, handle = index.resumable_query(vector=queries[0].tolist(), top_k=3, namespace=NS)
    assert len(first) == 3
    assert len(handle.fetch_next(2)) == 2
    handle.stop()
    not_found(lambda: handle.fetch_next(1))
    not_found(handle.stop)
    # The context manager stops it too.
    with index.resumable_query(vector=queries[0].tolist(), top_k=1, namespace=NS)[1] as h:
        assert len(h.fetch_next(1)) == 1
    not_found(lambda: h.fetch_next(1))
    for path, body in [
        ("/resumable-query-next", {"uuid": "00000000-0000-4000-8000-000000000000", "additionalK": 1}),
        ("/resumable-query-end", {"uuid": "nope"}),
    ]:
        res = raw_request("POST", path, token=token, body=json.dumps(body).encode())
        assert res.status == 404, (res.status, res.body)
        assert res.json()["status"] == 404 and "not found" in res.json()["error"]


def test_idle_queries_expire_after_max_idle(index, small):
    _, _, queries = small
    _, handle = index.resumable_query(vector=queries[1].tolist(), top_k=1, namespace=NS, max_idle=2)
    time.sleep(1.0)
    assert len(handle.fetch_next(1)) == 1, "idle 1 s of 2: still open"
    time.sleep(1.0)
    assert len(handle.fetch_next(1)) == 1, "each page restarts the idle time"
    time.sleep(2.5)
    not_found(lambda: handle.fetch_next(1))


def test_bad_max_idle_and_additional_k_are_400(index, small, token):
    for body in [
        {"vector": [1.0] * DIM_SMALL, "maxIdle": 0},
        {"vector": [1.0] * DIM_SMALL, "maxIdle": -5},
        {"vector": [1.0] * DIM_SMALL, "maxIdle": 10**9},
    ]:
        res = raw_request("POST", f"/resumable-query/{NS}", token=token, body=json.dumps(body).encode())
        assert res.status == 400 and "maxIdle" in res.json()["error"], (res.status, res.body)
    _, handle = index.resumable_query(vector=[1.0] * DIM_SMALL, top_k=1, namespace=NS)
    with handle:
        with pytest.raises(UpstashError, match="topK"):
            handle.fetch_next(0)
        assert len(handle.fetch_next(1)) == 1, "still open after a bad page request"


def test_text_query_without_a_dense_model_is_a_json_error(index, small):
    # `/resumable-query-data` is served; this dense server has no model to embed the text with.
    with pytest.raises(UpstashError, match="model"):
        index.resumable_query(data="some text", top_k=1, namespace=NS)


# ---------------------------------------------------------------------------------------------
# A 384-d server over minilm-text


def dataset_dir() -> Optional[Path]:
    candidates = [
        os.environ.get("FLOWVEC_DATASET"),
        str(REPO.parent / "shared" / "datasets" / "minilm-text"),
        "/work/shared/datasets/minilm-text",
    ]
    for c in candidates:
        if c and (Path(c) / "base.fvecs").is_file() and (Path(c) / "dev_queries.fvecs").is_file():
            return Path(c)
    return None


def read_fvecs(path: Path, rows: int) -> np.ndarray:
    raw = np.fromfile(path, dtype=np.int32, count=rows * (DIM_BIG + 1))
    raw = raw.reshape(-1, DIM_BIG + 1)
    assert (raw[:, 0] == DIM_BIG).all(), f"{path}: not {DIM_BIG}-d fvecs"
    return raw[:, 1:].view(np.float32).copy()


@pytest.fixture(scope="module")
def minilm():
    data = dataset_dir()
    if data is None:
        pytest.skip(
            "minilm-text dataset not found (set FLOWVEC_DATASET to a folder with base.fvecs and "
            "dev_queries.fvecs)"
        )
    base = read_fvecs(data / "base.fvecs", N_BIG)
    assert base.shape == (N_BIG, DIM_BIG), base.shape
    queries = read_fvecs(data / "dev_queries.fvecs", 3)
    return [f"b{i:05d}" for i in range(N_BIG)], base, queries


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def big_url(minilm, token, tmp_path_factory):
    """A second server: dense COSINE 384-d, at most CAP open resumable queries."""
    binary = Path(os.environ.get("FLOWVEC_SERVER_BIN") or REPO / "target" / "release" / "flowvec-server")
    if not binary.is_file():
        pytest.fail(
            f"{binary} not found: build it (`cargo build --release -p flowvec-server`, as run_e2e.sh "
            "does) or set FLOWVEC_SERVER_BIN",
            pytrace=False,
        )
    work = tmp_path_factory.mktemp("resumable-384")
    port = _free_port()
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                str(binary), "--port", str(port), "--token", token, "--dimension", str(DIM_BIG),
                "--metric", "COSINE", "--data-dir", str(work / "data"), "--fsync", "off",
                "--resumable-max-open", str(CAP),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"384-d server did not start; its log:\n{log_path.read_text()}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def big(big_url, token, minilm) -> Index:
    ids, base, _ = minilm
    index = Index(url=big_url, token=token, retries=0)
    for start in range(0, N_BIG, 500):
        index.upsert(
            vectors=[(ids[i], base[i].tolist()) for i in range(start, min(start + 500, N_BIG))]
        )
    assert index.info().vector_count == N_BIG
    return index


def test_pages_through_1000_minilm_results_against_an_exact_scan(big, minilm):
    ids, base, queries = minilm
    for q in queries:
        scores = cosine_scores(ids, base, q)
        first, handle = big.resumable_query(vector=q.tolist(), top_k=100, max_idle=300)
        with handle:
            results = page_through(handle, first, 1000, 100)
        check_ranking(results, scores, 1000)


def test_pages_through_the_whole_namespace_once(big, minilm):
    ids, base, queries = minilm
    scores = cosine_scores(ids, base, queries[0])
    first, handle = big.resumable_query(vector=queries[0], top_k=1000, max_idle=300)
    with handle:
        results = page_through(handle, first, N_BIG, 1000)
        assert handle.fetch_next(1000) == [], "every record once, then nothing"
    check_ranking(results, scores, N_BIG)


def _post(url: str, path: str, token: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_cap_refuses_with_429_until_a_query_ends(big, big_url, token, minilm):
    _, _, queries = minilm
    q = queries[1].tolist()
    handles = [big.resumable_query(vector=q, top_k=1, max_idle=300)[1] for _ in range(CAP)]
    try:
        with pytest.raises(UpstashError, match="too many open resumable queries"):
            big.resumable_query(vector=q, top_k=1)
        status, body = _post(big_url, "/resumable-query", token, {"vector": q, "topK": 1})
        assert status == 429 and body["status"] == 429, (status, body)
        handles.pop().stop()
        first, handle = big.resumable_query(vector=q, top_k=1, max_idle=300)
        handles.append(handle)
        assert len(first) == 1
    finally:
        for h in handles:
            h.stop()
