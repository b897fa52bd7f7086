#!/usr/bin/env python3
"""flowvec against its peers on one dataset, one thread each: dense ANN (hnswlib, faiss-cpu
IndexHNSWFlat and IndexHNSWSQ 8-bit + IndexRefineFlat, glass (pyglass-portable), SymphonyQG
(rabitqlib), usearch, flowvec's hnsw_rs backend), sparse top-10 (scipy.sparse CSR product,
Seismic, BMP), filtered dense search (hnswlib's filter callback) and the flow-control engine
against governor (`cargo bench --bench flow`).

Run through `run.sh` (it creates the venv); see README.md in this folder. Writes
`target/peers/peers.md` (tables, flowvec/peer ratios), `target/peers/results.json` (every
measured point) and `target/peers/recall_qps.png`.
"""

import os

# One thread everywhere, set before numpy/faiss load their thread pools.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ[var] = "1"

import argparse
import contextlib
import ctypes
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
K = 10
RECALL_TARGETS = (0.90, 0.95, 0.99)
FULL_EFS = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256]
QUICK_EFS = [16, 32, 64, 128]
FILTER_EFS = [64]
# Dense libraries run in interleaved rounds (--only key, report name), and the peers the
# "flowvec vs the best peer" table picks from.
ROUND_LIBS = (("native", "flowvec native"), ("int8", "flowvec native int8"), ("bits", "flowvec native bits"),
              ("hnswlib", "hnswlib"),
              ("faiss", "faiss HNSWFlat"), ("faiss_sq8", "faiss HNSWSQ8+refine"), ("glass", "glass"),
              ("symqg", "SymphonyQG"))
ROUND_NAMES = [name for _, name in ROUND_LIBS]
BEST_PEER_NAMES = ("hnswlib", "faiss HNSWSQ8+refine", "glass", "SymphonyQG")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    rows = raw.reshape(-1, dim + 1)
    assert (rows[:, 0] == dim).all(), f"{path}: ragged rows"
    return np.ascontiguousarray(rows[:, 1:]).view(dtype)


def write_ivecs(path, rows):
    rows = np.asarray(rows, dtype=np.int32)
    out = np.empty((rows.shape[0], rows.shape[1] + 1), dtype=np.int32)
    out[:, 0] = rows.shape[1]
    out[:, 1:] = rows
    out.tofile(path)


def recall_at_k(found, gt):
    hits = 0
    for got, truth in zip(found, gt):
        hits += len(set(int(x) for x in got[:K]) & set(int(x) for x in truth[:K]))
    return hits / (K * len(gt))


_libc = ctypes.CDLL("libc.so.6")


def rss_bytes():
    """Resident set size after handing freed heap back to the OS (so temporaries don't count)."""
    _libc.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Timer:
    """Wall and process CPU time of a block (one thread, so CPU time = the work's time)."""

    def __enter__(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0


@contextlib.contextmanager
def native_stdout_to_stderr():
    """Sends what native code prints on stdout (glass and Seismic print progress there) to
    stderr for the block, so stdout carries only the report."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def best_of(repeat, fn):
    """Runs `fn` `repeat` times; the fastest wall and fastest CPU time, and the last result."""
    wall, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        with Timer() as t:
            out = fn()
        wall, cpu = min(wall, t.wall), min(cpu, t.cpu)
    return wall, cpu, out


# ---------------------------------------------------------------------------------------------
# Dense peers. Each returns {"build_s", "build_cpu_s", "mem_mb", "points": [{ef, recall, qps,
# qps_cpu}], "filtered": {mod: [points]}}.


def run_hnswlib(base, queries, gt, efs, args, filters):
    import hnswlib

    n, dim = base.shape
    before = rss_bytes()
    index = hnswlib.Index(space="cosine", dim=dim)
    with Timer() as t:
        index.init_index(max_elements=n, ef_construction=args.ef_construction, M=args.m, random_seed=100)
        index.set_num_threads(1)
        index.add_items(base, np.arange(n), num_threads=1)
    mem = rss_bytes() - before
    out = {"build_s": t.wall, "build_cpu_s": t.cpu, "mem_mb": mem / 1e6, "points": [], "filtered": {}}
    for ef in efs:
        index.set_ef(ef)
        wall, cpu, (labels, _) = best_of(args.repeat, lambda: index.knn_query(queries, k=K, num_threads=1))
        out["points"].append(point(ef, recall_at_k(labels, gt), len(queries), wall, cpu))
    for mod, fgt in filters.items():
        pts = []
        for ef in FILTER_EFS:
            index.set_ef(ef)
            keep = lambda label, mod=mod: label % mod == 0  # noqa: E731
            wall, cpu, (labels, _) = best_of(
                args.repeat, lambda: index.knn_query(queries, k=K, num_threads=1, filter=keep)
            )
            pts.append(point(ef, recall_at_k(labels, fgt), len(queries), wall, cpu))
        out["filtered"][mod] = pts
    return out


def run_faiss(base, queries, gt, efs, args):
    import faiss

    faiss.omp_set_num_threads(1)
    n, dim = base.shape
    before = rss_bytes()
    index = faiss.IndexHNSWFlat(dim, args.m, faiss.METRIC_INNER_PRODUCT)  # unit vectors: IP = cosine
    index.hnsw.efConstruction = args.ef_construction
    with Timer() as t:
        index.add(base)
    mem = rss_bytes() - before
    out = {"build_s": t.wall, "build_cpu_s": t.cpu, "mem_mb": mem / 1e6, "points": []}
    for ef in efs:
        index.hnsw.efSearch = ef
        wall, cpu, (_, labels) = best_of(args.repeat, lambda: index.search(queries, K))
        out["points"].append(point(ef, recall_at_k(labels, gt), len(queries), wall, cpu))
    return out


FAISS_SQ8_K_FACTOR = 2  # refine 2k = 20 SQ8 candidates with exact inner products


def run_faiss_sq8(base, queries, gt, efs, args):
    """faiss IndexHNSWSQ (8-bit scalar quantizer, one (min, max) per dimension) walked on the SQ8
    codes, wrapped in IndexRefineFlat: the HNSW returns k * k_factor candidates, re-ranked with
    exact inner products over a float copy of the vectors."""
    import faiss

    faiss.omp_set_num_threads(1)
    n, dim = base.shape
    before = rss_bytes()
    hnsw = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, args.m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = args.ef_construction
    index = faiss.IndexRefineFlat(hnsw)  # must wrap the empty index: it adds to both
    index.k_factor = FAISS_SQ8_K_FACTOR
    with Timer() as t:
        index.train(base)  # the SQ8 ranges (one pass over the base)
        index.add(base)
    mem = rss_bytes() - before
    out = {"build_s": t.wall, "build_cpu_s": t.cpu, "mem_mb": mem / 1e6, "points": [],
           "k_factor": FAISS_SQ8_K_FACTOR}
    for ef in efs:
        hnsw.hnsw.efSearch = ef
        wall, cpu, (_, labels) = best_of(args.repeat, lambda: index.search(queries, K))
        out["points"].append(point(ef, recall_at_k(labels, gt), len(queries), wall, cpu))
    return out


def run_glass(base, queries, gt, efs, args):
    """glass (pyglass-portable): HNSW graph with R = 2M, L = efConstruction, built on fp32;
    searched with SQ8U codes, the candidates refined in fp32. `optimize` tunes its prefetch
    settings on sample queries (one thread); its time is kept apart from the build."""
    import glass

    glass.set_num_threads(1)
    n, dim = base.shape
    before = rss_bytes()
    with native_stdout_to_stderr():
        with Timer() as t:
            builder = glass.Index("HNSW", metric="IP", quant="FP32", R=2 * args.m, L=args.ef_construction)
            graph = builder.build(base)
            searcher = glass.Searcher(graph, base, "IP", "SQ8U", "FP32")
        with Timer() as opt:
            searcher.optimize(1)
    del builder  # the builder is not needed to search
    mem = rss_bytes() - before
    out = {"build_s": t.wall, "build_cpu_s": t.cpu, "optimize_cpu_s": opt.cpu, "mem_mb": mem / 1e6,
           "points": []}
    for ef in efs:
        searcher.set_ef(ef)
        wall, cpu, (labels, _) = best_of(args.repeat, lambda: searcher.batch_search(queries, K, 1))
        out["points"].append(point(ef, recall_at_k(labels, gt), len(queries), wall, cpu))
    return out


def run_symqg(base, queries, gt, efs, args):
    """SymphonyQG (rabitqlib SymqgIndex): max degree 2M (rounded up to a multiple of 32, which it
    requires), 8-bit RaBitQ codes for the vectors, 1-bit FastScan codes for the neighbours; PiPNN
    initialisation then one refinement pass (the library's default build). `search_batch`
    answers the whole batch in one call (one thread). Its build is seeded from random_device:
    recall moves a little from one build to the next."""
    import rabitqlib

    n, dim = base.shape
    before = rss_bytes()
    with native_stdout_to_stderr():
        degree = max(32, -(-2 * args.m // 32) * 32)
        index = rabitqlib.SymqgIndex(dim, degree, metric="ip", quantization_bits=8)
        with Timer() as t:
            index.build(base, args.ef_construction, num_threads=1)
    mem = rss_bytes() - before
    out = {"build_s": t.wall, "build_cpu_s": t.cpu, "mem_mb": mem / 1e6, "points": []}
    for ef in efs:
        e = max(ef, K)  # it wants ef >= k
        wall, cpu, (labels, _) = best_of(args.repeat, lambda: index.search_batch(queries, K, e, num_threads=1))
        out["points"].append(point(ef, recall_at_k(labels, gt), len(queries), wall, cpu))
    return out


def run_usearch(base, queries, gt, efs, args):
    from usearch.index import Index

    n, dim = base.shape
    before = rss_bytes()
    index = Index(
        ndim=dim, metric="cos", dtype="f32", connectivity=args.m, expansion_add=args.ef_construction
    )
    with Timer() as t:
        index.add(np.arange(n), base, threads=1)
    mem = rss_bytes() - before
    out = {"build_s": t.wall, "build_cpu_s": t.cpu, "mem_mb": mem / 1e6, "points": []}
    for ef in efs:
        index.expansion_search = ef
        wall, cpu, matches = best_of(args.repeat, lambda: index.search(queries, K, threads=1))
        out["points"].append(point(ef, recall_at_k(matches.keys, gt), len(queries), wall, cpu))
    return out


def point(ef, recall, nq, wall, cpu):
    return {"ef": ef, "recall": recall, "qps": nq / wall, "qps_cpu": nq / cpu if cpu > 0 else None}


def run_flowvec(backend, paths, efs, args, filters, extra=(), tag=None):
    cmd = [
        str(ROOT / "target/release/examples/ann_bench"),
        "--base", str(paths["base"]), "--queries", str(paths["queries"]), "--gt", str(paths["gt"]),
        "--metric", "cosine", "--m", str(args.m), "--ef-construction", str(args.ef_construction),
        "--backend", backend, "--ef", ",".join(map(str, efs)), "--repeat", str(args.repeat),
    ] + list(extra)
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    for mod, path in filters.items():
        cmd += ["--filter", f"{mod}={path}"]
    log("  " + " ".join(cmd))
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    (Path(args.out) / f"ann_bench_{tag or backend}.txt").write_text(text)
    num = lambda key: float(re.search(rf"\b{key}=([0-9.]+)", text).group(1))  # noqa: E731
    out = {"build_s": num("build_s"), "build_cpu_s": num("build_cpu_s"), "mem_mb": num("mem_mb"),
           "points": [], "filtered": {}}
    wall = {}
    for line in text.splitlines():
        m = re.match(r"(?:filter_mod=(\d+) )?ef=(\d+) recall@10=([0-9.]+) qps=([0-9.]+)", line)
        if m:
            wall[(m.group(1), int(m.group(2)))] = (float(m.group(3)), float(m.group(4)))
        m = re.match(r"(?:filter_mod=(\d+) )?cpu ef=(\d+) qps_cpu=([0-9.]+)", line)
        if m:
            key = (m.group(1), int(m.group(2)))
            recall, qps = wall[key]
            p = {"ef": key[1], "recall": recall, "qps": qps, "qps_cpu": float(m.group(3))}
            if key[0] is None:
                out["points"].append(p)
            else:
                out["filtered"].setdefault(int(key[0]), []).append(p)
    return out


def qps_at(points, target, key):
    """QPS at recall `target`, linearly interpolated (in log QPS) between the sweep's points;
    None when the sweep never reaches it. Points are taken in ef order; recall rises with ef."""
    pts = sorted(points, key=lambda p: p["ef"])
    if pts and pts[0]["recall"] >= target:
        return pts[0][key]  # already there at the smallest ef: a lower bound on the real figure
    for lo, hi in zip(pts, pts[1:]):
        if lo["recall"] < target <= hi["recall"]:
            f = (target - lo["recall"]) / (hi["recall"] - lo["recall"])
            return float(np.exp(np.log(lo[key]) + f * (np.log(hi[key]) - np.log(lo[key]))))
    return None


# ---------------------------------------------------------------------------------------------
# Sparse: flowvec's exact engine vs a scipy CSR product, Seismic and BMP.

SPARSE_WEIGHTINGS = (("bm25", "dev_gt_sparse.ivecs"), ("bm25+idf", "dev_gt_sparse_idf.ivecs"))
# Seismic, approximate: (query_cut, heap_factor); query_cut None = every query term.
SEISMIC_SETTINGS = ((20, 0.9), (None, 0.7))
# BMP: block size 2 was the fastest of 1, 2, 4, 8, 16, 32 on minilm-text (its base is in random
# order, no document reordering, so block maxima are loose and small blocks prune best). Its
# per-term block maxima are a dense terms x blocks array unless compress_range is set: 990 MB
# resident at block size 2 without it, 162 MB with it, and a little faster with it.
BMP_BSIZE = 2
BMP_COMPRESS_RANGE = True
BMP_MAX_QUERY_WEIGHT = 32  # bmp's MAX_TERM_WEIGHT: it scales each query's largest weight to 32


def load_sparse(path, n_cols=None):
    indptr, indices, values = [0], [], []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            indices.extend(row["indices"])
            values.extend(row["values"])
            indptr.append(len(indices))
    return np.array(indptr), np.array(indices, dtype=np.int64), np.array(values, dtype=np.float32)


def load_sparse_data(data):
    """Base and dev queries as CSR arrays, the idf used for the `bm25+idf` rows (the dataset's
    formula), and the query values of each weighting (binary, or idf(t))."""
    bp, bi, bv = load_sparse(data / "base_sparse.jsonl")
    qp, qi, qv = load_sparse(data / "dev_queries_sparse.jsonl")
    vocab = int(max(bi.max(), qi.max())) + 1
    n = len(bp) - 1
    df = np.bincount(bi, minlength=vocab).astype(np.float64)
    idf = np.log((n - df + 0.5) / (df + 0.5) + 1.0)
    qvals = {"bm25": qv, "bm25+idf": (qv * idf[qi]).astype(np.float32)}
    gts = {name: read_vecs(data / f, np.int32) for name, f in SPARSE_WEIGHTINGS}
    return {"bp": bp, "bi": bi, "bv": bv, "qp": qp, "qi": qi, "qvals": qvals, "vocab": vocab, "n": n,
            "nq": len(qp) - 1, "gts": gts}


def sparse_row(recall, nq, wall, cpu, build=None, mem_mb=None, **extra):
    row = {"recall": recall, "qps": nq / wall, "qps_cpu": nq / cpu if cpu else None, "mem_mb": mem_mb}
    if build is not None:
        row["build_s"], row["build_cpu_s"] = build.wall, build.cpu
    row.update(extra)
    return row


def run_scipy_sparse(sd, args):
    import scipy.sparse as sp

    with Timer() as t:
        docs = sp.csr_matrix((sd["bv"], sd["bi"], sd["bp"]), shape=(sd["n"], sd["vocab"]))
        docs_t = docs.T.tocsr()  # term-major: the product below walks postings
    mem = (docs_t.data.nbytes + docs_t.indices.nbytes + docs_t.indptr.nbytes) / 1e6
    out = {}
    for name, _ in SPARSE_WEIGHTINGS:
        q = sp.csr_matrix((sd["qvals"][name], sd["qi"], sd["qp"]), shape=(sd["nq"], sd["vocab"]))

        def search():
            found = []
            for start in range(0, q.shape[0], 100):
                scores = (q[start:start + 100] @ docs_t).toarray()
                top = np.argpartition(-scores, K, axis=1)[:, :K]
                order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
                found.extend(np.take_along_axis(top, order, axis=1))
            return found

        wall, cpu, found = best_of(args.repeat, search)
        out[name] = sparse_row(recall_at_k(found, sd["gts"][name]), sd["nq"], wall, cpu, t, mem)
    return out


def run_seismic(sd, args):
    """Seismic (pyseismic-lsr): SeismicIndex built in memory from the CSR arrays (component id =
    term id, the library's default build settings, one thread), searched with `batch_search`
    on one thread at each of SEISMIC_SETTINGS. Returns {setting label: {weighting: row}}."""
    import seismic

    st = seismic.get_seismic_string()
    bp, qp, qi = sd["bp"], sd["qp"], sd["qi"]
    before = rss_bytes()
    with native_stdout_to_stderr():
        with Timer() as t:
            ds = seismic.SeismicDataset(dim=sd["vocab"])
            ds.add_documents_by_id([str(i) for i in range(sd["n"])], sd["bi"], sd["bv"], bp.astype(np.int64))
            index = seismic.SeismicIndex.build_from_dataset(ds, num_threads=1)
        del ds
    mem = (rss_bytes() - before) / 1e6
    qids = np.array([str(i) for i in range(sd["nq"])], dtype=st)
    comps = [np.array([str(x) for x in qi[qp[i]:qp[i + 1]]], dtype=st) for i in range(sd["nq"])]
    all_terms = int(np.diff(qp).max())
    out = {}
    for cut, heap in SEISMIC_SETTINGS:
        label = f"seismic query_cut={cut or 'all'} heap_factor={heap}"
        out[label] = {}
        for name, _ in SPARSE_WEIGHTINGS:
            vals = [np.ascontiguousarray(sd["qvals"][name][qp[i]:qp[i + 1]], dtype=np.float32) for i in range(sd["nq"])]
            wall, cpu, res = best_of(args.repeat, lambda: index.batch_search(
                qids, comps, vals, K, cut or all_terms, heap, num_threads=1))
            found = [[int(r[2]) for r in row] for row in res]
            out[label][name] = sparse_row(recall_at_k(found, sd["gts"][name]), sd["nq"], wall, cpu, t, mem,
                                          query_cut=cut or all_terms, heap_factor=heap)
    return out


def run_bmp(sd, args):
    """BMP (block-max pruning, PyPI `bmp`): it stores 8-bit integer impacts and 8-bit query
    weights and sums them in a 16-bit accumulator. Doc values are quantized to round(v * s)
    (at least 1), s = min(255 / max v, 65535 / (32 * largest row sum)): no score can wrap
    whatever the query (bmp scales every query's largest weight to 32). Queries go through
    `Searcher.search` (one Python call per query, one thread), alpha = beta = 1 (no early
    termination, all query terms): exact over the quantized values."""
    import bmp

    bp, bi, bv, qp, qi = sd["bp"], sd["bi"], sd["bv"], sd["qp"], sd["qi"]
    row_sum = np.add.reduceat(bv.astype(np.float64), bp[:-1])
    scale = min(255 / float(bv.max()), 65535 / (BMP_MAX_QUERY_WEIGHT * float(row_sum.max())))
    impacts = np.maximum(1, np.rint(bv * scale)).astype(np.int64)
    terms = [str(x) for x in range(sd["vocab"])]
    tmp = Path(tempfile.mkdtemp(prefix="bmp-", dir=args.out))
    try:
        with native_stdout_to_stderr():
            with Timer() as t:
                indexer = bmp.Indexer(str(tmp / "index.bmp"), bsize=BMP_BSIZE, compress_range=BMP_COMPRESS_RANGE)
                bi_list, imp_list = bi.tolist(), impacts.tolist()
                for i in range(sd["n"]):
                    a, b = int(bp[i]), int(bp[i + 1])
                    indexer.add_document(str(i), {terms[x]: w for x, w in zip(bi_list[a:b], imp_list[a:b])})
                indexer.finish()
                del indexer
                before = rss_bytes()
                searcher = bmp.Searcher(str(tmp / "index.bmp"))
        mem = (rss_bytes() - before) / 1e6
        file_mb = (tmp / "index.bmp").stat().st_size / 1e6
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {}
    for name, _ in SPARSE_WEIGHTINGS:
        vals = sd["qvals"][name].astype(np.float64).tolist()
        qi_list = qi.tolist()
        queries = [{terms[x]: v for x, v in zip(qi_list[qp[i]:qp[i + 1]], vals[qp[i]:qp[i + 1]])}
                   for i in range(sd["nq"])]
        wall, cpu, res = best_of(args.repeat, lambda: [searcher.search(q, k=K, alpha=1.0, beta=1.0) for q in queries])
        found = [[int(x) for x in docnos] for docnos, _ in res]
        out[name] = sparse_row(recall_at_k(found, sd["gts"][name]), sd["nq"], wall, cpu, t, mem,
                               bsize=BMP_BSIZE, compress_range=BMP_COMPRESS_RANGE, impact_scale=scale,
                               file_mb=file_mb)
    return out


def run_flowvec_sparse(data, args):
    out = {}
    for name, gt_file in SPARSE_WEIGHTINGS:
        extra = ["--idf"] if name == "bm25+idf" else []
        cmd = [str(ROOT / "target/release/examples/sparse_bench"), "--base", str(data / "base_sparse.jsonl"),
               "--queries", str(data / "dev_queries_sparse.jsonl"), "--gt", str(data / gt_file),
               "--repeat", str(args.repeat)] + extra
        log("  " + " ".join(cmd))
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        (Path(args.out) / f"sparse_bench_{name}.txt").write_text(text)
        m = re.search(r"recall@10=([0-9.]+) qps=([0-9.]+)", text)
        b = re.search(r"build_s=([0-9.]+)", text)
        mem = re.search(r"memory:.*?\bbytes=(\d+)", text)
        c = re.search(r"qps_cpu=([0-9.]+)", text)
        out[name] = {"recall": float(m.group(1)), "qps": float(m.group(2)),
                     "qps_cpu": float(c.group(1)) if c else None,
                     "build_s": float(b.group(1)) if b else None,
                     "mem_mb": int(mem.group(1)) / 1e6 if mem else None}
    return out


def merge_sparse_best(old, new):
    """Keeps, per engine and weighting, the best QPS (wall and CPU) and build time of the rounds."""
    if old is None:
        return new
    out = {}
    for name, row in new.items():
        a = old.get(name)
        if a is None:
            out[name] = row
            continue
        m = dict(a)
        if abs(a["recall"] - row["recall"]) > 0.002:
            log(f"  note: sparse recall differs between rounds ({name}): {a['recall']:.4f} vs {row['recall']:.4f}")
        m["qps"] = max(a["qps"], row["qps"])
        if a.get("qps_cpu") is not None and row.get("qps_cpu") is not None:
            m["qps_cpu"] = max(a["qps_cpu"], row["qps_cpu"])
        for k in ("build_s", "build_cpu_s"):
            if a.get(k) is not None and row.get(k) is not None:
                m[k] = min(a[k], row[k])
        m["rounds"] = a.get("rounds", 1) + 1
        out[name] = m
    return out


# ---------------------------------------------------------------------------------------------
# Flow: the flow-control engine against governor (benches/flow.rs prints the figures from its
# main when criterion's filter matches no benchmark).

FLOW_TARGETS = {"one_key_ns": 100.0, "random_ratio": 1.0, "per_key_b": 125.8, "per_message_b": 41.9}


def run_flow(args):
    log("flow: building benches/flow.rs (cargo bench --no-run, bench profile)")
    subprocess.run(["cargo", "bench", "-p", "flowvec", "--bench", "flow", "--no-run"], cwd=ROOT, check=True)
    cmd = ["cargo", "bench", "-p", "flowvec", "--bench", "flow", "--", "nomatch-xyz"]
    log("flow: " + " ".join(cmd))
    text = subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    (Path(args.out) / "flow_bench.txt").write_text(text)
    out = {"rows": {}, "per_message_b": None, "per_key_b": None}
    num = r"([0-9.]+)"
    for line in text.splitlines():
        m = re.match(rf"\s*(1 key|1M keys, random slots|1M keys)\s*: flow\s+{num}\s*/\s*{num} ns \| governor\s+"
                     rf"{num}\s*/\s*{num} ns \| ratio flow/governor {num}\s*/\s*{num}", line)
        if m:
            v = [float(x) for x in m.groups()[1:]]
            out["rows"][m.group(1)] = {"flow_median_ns": v[0], "flow_best_ns": v[1], "governor_median_ns": v[2],
                                       "governor_best_ns": v[3], "ratio_median": v[4], "ratio_best": v[5]}
        m = re.match(rf"waiting message: {num} B", line)
        if m:
            out["per_message_b"] = float(m.group(1))
        m = re.match(rf"live key.*?: {num} B each", line)
        if m:
            out["per_key_b"] = float(m.group(1))
    if len(out["rows"]) < 3 or out["per_key_b"] is None or out["per_message_b"] is None:
        log(f"flow: could not parse every line of benches/flow.rs's report; see {Path(args.out) / 'flow_bench.txt'}")
    return out


# ---------------------------------------------------------------------------------------------
# Report.


def fmt(x, digits=0):
    if x is None:
        return "—"
    return f"{x:,.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b not in (None, 0) else "—"


def merge_best(old, new, name=""):
    """Keeps the faster of two measurements of one library: build and QPS per ef. Recall is the
    same every round for a deterministic build; where it is not (SymphonyQG seeds its build from
    `std::random_device`), the mean over the rounds is kept."""
    if old is None:
        new["rounds"] = 1
        return new
    out = dict(old)
    rounds = old.get("rounds", 1)
    out["rounds"] = rounds + 1
    for k in ("build_s", "build_cpu_s"):
        out[k] = min(old[k], new[k])
    points = []
    for a, b in zip(old["points"], new["points"]):
        if abs(a["recall"] - b["recall"]) > 0.002:
            log(f"  note: {name} recall differs between rounds at ef={a['ef']}: {a['recall']:.4f} vs {b['recall']:.4f}"
                " (the mean is kept)")
        recall = (a["recall"] * rounds + b["recall"]) / (rounds + 1)
        points.append(dict(a, recall=recall, qps=max(a["qps"], b["qps"]), qps_cpu=max(a["qps_cpu"], b["qps_cpu"])))
    out["points"] = points
    return out


def report(res, args, elapsed):
    key = "qps_cpu"
    meta = res["meta"]
    lines = [
        f"# flowvec vs peers — {meta['dataset']}",
        "",
        f"CPU: {meta['cpu']}. Run {meta['started']} UTC, {elapsed / 60:.1f} min, load average before "
        f"{meta['load_before']}.",
    ]
    dense = res["dense"]
    lines += [] if not dense else [
        "",
        f"{meta['n']:,} base vectors{' (--limit)' if meta.get('limit') else ''}, {meta['nq']:,} queries, "
        f"dim {meta['dim']}, M={args.m}{' (R=2M for glass and SymphonyQG)' if {'glass', 'SymphonyQG'} & set(dense) else ''}, "
        f"efConstruction={args.ef_construction}, "
        f"one thread, recall@10. QPS and build rates from CPU time (best of {args.repeat} passes; "
        f"{', '.join(n for n in ROUND_NAMES if n in dense) or 'none'} also best of {args.rounds} interleaved "
        f"rounds, each rebuilt; the machine "
        f"is shared), memory = index heap (Python libraries: growth of the resident set over the build). "
        f"Ratios: flowvec native / peer (>1 is flowvec better; for memory <1).",
        "",
        "## Dense",
        "",
        "| library | build (vec/s) | memory (MB) | QPS @ recall 0.90 | QPS @ 0.95 | QPS @ 0.99 | recall at ef=64 | QPS at ef=64 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    nat = dense.get("flowvec native")
    n = res["meta"]["n"]
    for name, r in dense.items():
        at = [qps_at(r["points"], t, key) for t in RECALL_TARGETS]
        p64 = next((p for p in r["points"] if p["ef"] == 64), None)
        lines.append(
            f"| {name} | {fmt(n / r['build_cpu_s'])} | {fmt(r['mem_mb'], 1)} | "
            + " | ".join(fmt(a) for a in at)
            + f" | {fmt(p64['recall'], 3) if p64 else '—'} | {fmt(p64[key]) if p64 else '—'} |"
        )
    if nat:
        lines += ["", "flowvec native / peer:", "",
                  "| peer | build | memory | QPS @ 0.90 | QPS @ 0.95 | QPS @ 0.99 |", "|---|---|---|---|---|---|"]
        nat_at = [qps_at(nat["points"], t, key) for t in RECALL_TARGETS]
        for name, r in dense.items():
            if name.startswith("flowvec native"):
                continue  # the int8 walk is flowvec itself: its own line below
            at = [qps_at(r["points"], t, key) for t in RECALL_TARGETS]
            lines.append(
                f"| {name} | {ratio(r['build_cpu_s'], nat['build_cpu_s'])} | {ratio(nat['mem_mb'], r['mem_mb'])} | "
                + " | ".join(ratio(a, b) for a, b in zip(nat_at, at)) + " |"
            )
    q8, hl = dense.get("flowvec native int8"), dense.get("hnswlib")
    if q8 and hl:
        q8_at = [qps_at(q8["points"], t, key) for t in RECALL_TARGETS]
        hl_at = [qps_at(hl["points"], t, key) for t in RECALL_TARGETS]
        lines += ["", "flowvec native with the int8 walk (`Traversal::Int8`, opt-in: it keeps int8 copies "
                  "of the vectors, rescoring candidates exactly) / hnswlib: build "
                  f"{ratio(hl['build_cpu_s'], q8['build_cpu_s'])}, memory {ratio(q8['mem_mb'], hl['mem_mb'])}, QPS "
                  + " / ".join(ratio(a, b) for a, b in zip(q8_at, hl_at)) + " at recall 0.90 / 0.95 / 0.99."]
    best_rows = []
    # flowvec's walks: the default (exact) and the opt-in coded ones, each against the best peer.
    walks = [(label, dense.get(name)) for label, name in (
        ("default (exact walk)", "flowvec native"), ("int8 walk", "flowvec native int8"),
        ("1-bit walk", "flowvec native bits"))]
    walks = [(label, r) for label, r in walks if r]
    for target in (0.95, 0.99):
        cands = [(qps_at(dense[p]["points"], target, key), p) for p in BEST_PEER_NAMES if p in dense]
        cands = [(q, n) for q, n in cands if q is not None]
        if not cands or not walks:
            continue
        bq, bn = max(cands)
        cells = []
        for _, r in walks:
            q = qps_at(r["points"], target, key)
            cells.append(f"{fmt(q)} | {ratio(q, bq)} | {fmt(r['mem_mb'], 1)}")
        best_rows.append(f"| {target:.2f} | {bn} | {fmt(bq)} | {fmt(dense[bn]['mem_mb'], 1)} | " + " | ".join(cells) + " |")
    if best_rows:
        head = "".join(f" flowvec {label} QPS | / peer | memory (MB) |" for label, _ in walks)
        lines += ["", "## flowvec vs the best peer", "",
                  f"Best peer = the highest QPS (CPU) at that recall among {', '.join(BEST_PEER_NAMES)} "
                  "(those measured in this run that reach it). Ratios >1: flowvec faster.", "",
                  "| recall@10 | best peer | its QPS | its memory (MB) |" + head,
                  "|---|---|---|---|" + "---|---|---|" * len(walks)] + best_rows
    if "sparse" in res:
        sp_ = res["sparse"]
        fv = sp_.get("flowvec", {})
        lines += ["", "## Sparse top-10", "",
                  "| weighting | engine | recall@10 | QPS (wall) | QPS (CPU) | build (s) | memory (MB) | flowvec / engine (QPS, CPU) "
                  "| flowvec / engine (QPS, wall) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for w, _ in SPARSE_WEIGHTINGS:
            for engine, rows in sp_.items():
                r = rows.get(w)
                if r is None:
                    continue
                f = fv.get(w)
                build = r.get("build_cpu_s", r.get("build_s"))
                lines.append(f"| {w} | {engine} | {r['recall']:.4f} | {fmt(r['qps'])} | {fmt(r.get('qps_cpu'))} | "
                             f"{fmt(build, 2)} | {fmt(r.get('mem_mb'), 1)} | "
                             f"{'—' if engine == 'flowvec' else ratio(f.get('qps_cpu') if f else None, r.get('qps_cpu'))} | "
                             f"{'—' if engine == 'flowvec' else ratio(f['qps'] if f else None, r['qps'])} |")
        lines += ["", "Every engine runs on one thread; the ratios that count use CPU time (thread CPU time in "
                  "flowvec's sparse_bench, `time.process_time()` in Python), as the dense tables do, since wall "
                  "time on the shared host also counts waiting; the wall-clock ratio is shown beside them. Best of "
                  f"{args.repeat} passes and of {args.rounds} interleaved rounds. flowvec and "
                  "scipy are exact (ties aside: the ground truth gives a tie to the smaller id); Seismic is "
                  "approximate; BMP is exact over 8-bit quantized impacts, so its recall is below 1. scipy scores "
                  "100 queries per matrix product, Seismic answers the 1,000 queries in one `batch_search` call "
                  "(one thread), BMP and flowvec one query per call. Build: CPU seconds for the Python engines "
                  "(scipy: the CSR transpose; BMP: a Python loop adding documents, then its file is loaded), "
                  "wall seconds for flowvec. Memory: flowvec `SparseIndex::memory_bytes`, scipy the term-major "
                  "CSR arrays, Seismic and BMP the growth of the resident set."]
    if res.get("filtered"):
        f = res["filtered"]
        lines += ["", "## Filtered dense (allow ids with id % N == 0), ef=64", "",
                  "| selectivity | flowvec graph only: recall / QPS | flowvec default planner: recall / QPS | "
                  "hnswlib filter callback: recall / QPS | flowvec graph / hnswlib | flowvec default / hnswlib |",
                  "|---|---|---|---|---|---|"]
        for mod in sorted(f["hnswlib"], key=int):
            g, d, h = (f[name][mod][0] for name in ("flowvec graph only", "flowvec default planner", "hnswlib"))
            lines.append(f"| {100 / int(mod):g}% | {g['recall']:.3f} / {fmt(g[key])} | {d['recall']:.3f} / {fmt(d[key])} | "
                         f"{h['recall']:.3f} / {fmt(h[key])} | {ratio(g[key], h[key])} | {ratio(d[key], h[key])} |")
        lines += ["", "flowvec: `ann_bench --filter N=GT` (an allow closure given to `DenseIndex::search`); "
                  "graph only = exact-scan threshold 0, default planner = the library's threshold (4,000), "
                  "which sends a filter passing fewer vectors to an exact scan. hnswlib: "
                  "`knn_query(filter=callable)` (a Python call per visited node, which is how a hnswlib "
                  "user filters from Python). Ground truth: exact top-10 over the allowed ids."]
    if "flow" in res:
        fl = res["flow"]
        t = FLOW_TARGETS
        lines += ["", "## Flow (flowvec flow control vs governor)", "",
                  "`cargo bench -p flowvec --bench flow -- nomatch-xyz` (criterion runs no benchmark; the bench's "
                  "main prints a counting-allocator memory report and 25 batches of 200k calls per line: median / "
                  "best). flow = publish → poll_dispatch → complete; governor = keyed `check_key`. "
                  "Targets are judged on the median.", "",
                  "| measure | flowvec (median / best) | governor (median / best) | flow / governor (median / best) | target | met |",
                  "|---|---|---|---|---|---|"]

        def met(ok):
            return "—" if ok is None else ("yes" if ok else "**no**")

        for label, target, check in (
            ("1 key", f"≤ {t['one_key_ns']:g} ns", lambda r: r["flow_median_ns"] <= t["one_key_ns"]),
            ("1M keys", "—", None),
            ("1M keys, random slots", f"≤ {t['random_ratio']:g}× governor", lambda r: r["ratio_median"] <= t["random_ratio"]),
        ):
            r = fl["rows"].get(label)
            if r is None:
                lines.append(f"| {label} cycle | — | — | — | {target} | — |")
                continue
            lines.append(f"| {label} cycle | {r['flow_median_ns']:.1f} / {r['flow_best_ns']:.1f} ns | "
                         f"{r['governor_median_ns']:.1f} / {r['governor_best_ns']:.1f} ns | "
                         f"{r['ratio_median']:.2f}× / {r['ratio_best']:.2f}× | {target} | {met(check(r) if check else None)} |")
        for label, k, target in (("memory per live key", "per_key_b", t["per_key_b"]),
                                 ("memory per waiting message", "per_message_b", t["per_message_b"])):
            v = fl.get(k)
            lines.append(f"| {label} | {fmt(v, 1)} B | — | — | ≤ {target:g} B | {met(None if v is None else v <= target)} |")
        lines += ["", "Raw output: `flow_bench.txt`. 1M keys: keys visited in creation order; random slots: "
                  "in another order, so the key's slot misses the cache too."]
    if dense:
        lines += ["", "## Sweep (every point)", "", "| library | ef | recall@10 | QPS (CPU) | QPS (wall) |",
                  "|---|---|---|---|---|"]
    for name, r in dense.items():
        for p in r["points"]:
            lines.append(f"| {name} | {p['ef']} | {p['recall']:.4f} | {fmt(p['qps_cpu'])} | {fmt(p['qps'])} |")
    return "\n".join(lines) + "\n"


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for name, r in res["dense"].items():
        pts = sorted(r["points"], key=lambda p: p["ef"])
        ax.plot([p["recall"] for p in pts], [p["qps_cpu"] for p in pts], marker="o",
                lw=2.5 if name.startswith("flowvec native") else 1.5, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_ylabel("queries per CPU-second (one thread, log scale)")
    ax.set_title(f"{res['meta']['dataset']}: {res['meta']['n']:,} × {res['meta']['dim']}-d, "
                 f"M={res['meta']['m']}, efC={res['meta']['efc']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def cpu_model():
    """`lscpu`'s model name and L3 size, for the report's header."""
    try:
        text = subprocess.run(["lscpu"], check=True, capture_output=True, text=True,
                              env=dict(os.environ, LC_ALL="C")).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (lscpu failed)"
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    model = fields.get("Model name", "unknown").strip()
    l3 = fields.get("L3 cache", "").strip()
    cpus = fields.get("CPU(s)", "").strip()
    return model + (f", L3 {l3}" if l3 else "") + (f", {cpus} CPUs" if cpus else "")


ALL_NAMES = ["native", "int8", "bits", "hnswlib", "faiss", "faiss_sq8", "glass", "symqg", "usearch", "hnsw_rs",
             "sparse", "scipy", "seismic", "bmp", "filtered", "flow"]
SPARSE_PEERS = ("scipy", "seismic", "bmp")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/work/shared/datasets/minilm-text")
    ap.add_argument("--out", default=str(ROOT / "target/peers"))
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds of the fast dense libraries (flowvec native, int8, hnswlib, "
                         "faiss, faiss_sq8, glass, symqg) and of the sparse engines, best per ef / per "
                         "engine: the host's memory bandwidth drifts by minutes")
    ap.add_argument("--quick", action="store_true",
                    help="4 ef values; native, int8, hnswlib, faiss, usearch only (no hnsw_rs, faiss_sq8, "
                         "glass, symqg, sparse, filtered, flow)")
    ap.add_argument("--only", default="",
                    help="comma list of: " + ",".join(ALL_NAMES) + " (sparse = flowvec sparse with every "
                         "sparse peer; scipy, seismic, bmp = flowvec sparse with that peer only)")
    ap.add_argument("--limit", type=int, default=None,
                    help="dense only: keep the first N base vectors and recompute the ground truth "
                         "(exact inner product, numpy) over them; for quick checks")
    args = ap.parse_args()
    started = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    efs = QUICK_EFS if args.quick else FULL_EFS
    quick = ["native", "int8", "bits", "hnswlib", "faiss", "usearch"]
    full = ["native", "int8", "bits", "hnswlib", "faiss", "faiss_sq8", "glass", "symqg", "usearch", "hnsw_rs",
            "sparse", "filtered", "flow"]
    only = set(filter(None, args.only.split(","))) or set(quick if args.quick else full)
    unknown = only - set(ALL_NAMES)
    if unknown:
        ap.error(f"unknown --only names: {', '.join(sorted(unknown))} (known: {', '.join(ALL_NAMES)})")
    sparse_peers = [p for p in SPARSE_PEERS if p in only or "sparse" in only]
    if args.limit and args.limit <= 4000 and "filtered" in only:
        ap.error("--limit 4000 or less with `filtered`: ann_bench's default-planner run keeps an index that "
                 "small graph-less (exact-scan threshold 4,000) and stops; use a larger --limit or leave "
                 "`filtered` out of --only")

    if only & {"native", "int8", "bits", "hnsw_rs", "filtered"} or sparse_peers:
        log("building flowvec examples (release)")
        subprocess.run(["cargo", "build", "--release", "--example", "ann_bench", "--example", "sparse_bench"],
                       cwd=ROOT, check=True)
    paths = {"base": data / "base.fvecs", "queries": data / "dev_queries.fvecs", "gt": data / "dev_gt.ivecs"}
    base = read_vecs(paths["base"], np.float32)
    queries = read_vecs(paths["queries"], np.float32)
    gt = read_vecs(paths["gt"], np.int32)
    if args.limit and args.limit < len(base):
        base = np.ascontiguousarray(base[:args.limit])
        scores = queries @ base.T  # unit vectors: inner product = cosine
        depth = min(100, len(base))
        top = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        gt = np.take_along_axis(top, order, axis=1).astype(np.int32)
        paths["gt"] = out / f"gt_limit{args.limit}.ivecs"
        write_ivecs(paths["gt"], gt)
        log(f"--limit {args.limit}: first {len(base):,} base vectors, ground truth recomputed in {paths['gt']}")
    else:
        args.limit = None
    res = {"meta": {"dataset": data.name, "n": len(base), "nq": len(queries), "dim": base.shape[1],
                    "m": args.m, "efc": args.ef_construction, "efs": efs, "limit": args.limit,
                    "cpu": cpu_model(), "only": sorted(only),
                    "started": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
                    "load_before": open("/proc/loadavg").read().split()[0]},
           "dense": {}}

    filters = {}
    if "filtered" in only:
        for mod in (10, 100):
            keep = np.arange(0, len(base), mod)
            scores = queries @ base[keep].T
            top = np.argsort(-scores, axis=1, kind="stable")[:, :K]
            path = out / f"gt_filter_mod{mod}.ivecs"
            write_ivecs(path, keep[top])
            filters[mod] = path

    # The fast libraries are close, and this (shared) host's memory bandwidth drifts over
    # minutes: one pass each, one after another, once measured the same build 1.14x or 1.52x
    # hnswlib. So they run in interleaved rounds, each library rebuilt every round, and each
    # keeps its best build and its best QPS per ef (recall is the same every round).
    runs = {
        "native": lambda: run_flowvec("native", paths, efs, args, {}),
        "int8": lambda: run_flowvec("native", paths, efs, args, {}, extra=["--traversal", "int8"], tag="native_int8"),
        "bits": lambda: run_flowvec("native", paths, efs, args, {}, extra=["--traversal", "bits"], tag="native_bits"),
        "hnswlib": lambda: run_hnswlib(base, queries, gt, efs, args, {}),
        "faiss": lambda: run_faiss(base, queries, gt, efs, args),
        "faiss_sq8": lambda: run_faiss_sq8(base, queries, gt, efs, args),
        "glass": lambda: run_glass(base, queries, gt, efs, args),
        "symqg": lambda: run_symqg(base, queries, gt, efs, args),
    }
    if only & set(runs):
        for round_no in range(1, max(1, args.rounds) + 1):
            for key, name in ROUND_LIBS:
                if key in only:
                    log(f"{name} (round {round_no} of {args.rounds})")
                    res["dense"][name] = merge_best(res["dense"].get(name), runs[key](), name)
    if "usearch" in only:
        log("usearch")
        res["dense"]["usearch"] = run_usearch(base, queries, gt, efs, args)
    if "hnsw_rs" in only:
        log("flowvec hnsw_rs backend (slow build)")
        res["dense"]["flowvec hnsw_rs"] = run_flowvec("hnsw_rs", paths, efs, args, {})
    for r in res["dense"].values():
        r.pop("filtered", None)
    if filters:
        # Own builds, ef 64 only: filtered passes at 1% selectivity are slow on every graph.
        res["filtered"] = {}
        for label, threshold in (("flowvec graph only", "0"), ("flowvec default planner", "default")):
            log(f"filtered: {label}")
            r = run_flowvec("native", paths, FILTER_EFS, args, filters,
                            extra=["--exact-threshold", threshold], tag=f"filtered_{threshold}")
            res["filtered"][label] = {str(k): v for k, v in r["filtered"].items()}
        log("filtered: hnswlib")
        fgts = {mod: read_vecs(p, np.int32) for mod, p in filters.items()}
        r = run_hnswlib(base, queries, gt, FILTER_EFS, args, fgts)
        res["filtered"]["hnswlib"] = {str(k): v for k, v in r["filtered"].items()}
    if sparse_peers:
        # Interleaved rounds like the dense libraries: every engine rebuilt each round, best QPS kept.
        sd = load_sparse_data(data)
        sparse = {}
        for round_no in range(1, max(1, args.rounds) + 1):
            log(f"sparse: flowvec (round {round_no} of {args.rounds})")
            got = {"flowvec": run_flowvec_sparse(data, args)}
            if "scipy" in sparse_peers:
                log(f"sparse: scipy CSR (round {round_no} of {args.rounds})")
                got["scipy"] = run_scipy_sparse(sd, args)
            if "seismic" in sparse_peers:
                log(f"sparse: seismic (round {round_no} of {args.rounds})")
                got.update(run_seismic(sd, args))
            if "bmp" in sparse_peers:
                log(f"sparse: bmp (round {round_no} of {args.rounds})")
                got[f"bmp bsize={BMP_BSIZE}"] = run_bmp(sd, args)  # compress_range on
            for engine, rows in got.items():
                sparse[engine] = merge_sparse_best(sparse.get(engine), rows)
        res["sparse"] = sparse
    if "flow" in only:
        res["flow"] = run_flow(args)

    elapsed = time.time() - started
    res["meta"]["elapsed_min"] = round(elapsed / 60, 2)
    (out / "results.json").write_text(json.dumps(res, indent=1))
    md = report(res, args, elapsed)
    (out / "peers.md").write_text(md)
    if res["dense"]:
        plot(res, out / "recall_qps.png")
    print(md)
    log(f"done in {elapsed / 60:.1f} min: {out / 'peers.md'}" + (f", {out / 'recall_qps.png'}" if res["dense"] else ""))


if __name__ == "__main__":
    main()
