#!/usr/bin/env python3
"""How the dense index's cost grows with n (issue #16): build time, memory per vector and QPS at
recall@10 0.95 of flowvec (exact walk and int8 walk), hnswlib and the quantized peers glass
(HNSW graph, SQ8U search, FP32 rerank) and SymphonyQG (rabitqlib), at 10k, 43k (the real
minilm-text set) and 500k vectors (generated, 384-d, clustered; see `generate` below), one
thread for queries. Also the build rate on 1 and 2 threads of flowvec (`ann_bench
--build-threads`, when the binary has it) and hnswlib (`add_items(num_threads=…)`).

Run through `scaling.sh` (it checks the venv); see the "Scaling" section of README.md in this
folder. Writes `target/scaling/scaling.{md,json,png}` and `docs/peers/scaling.{md,png}`.
Results are merged into the existing `scaling.json` (size by size, library by library), so
sizes can be run separately: `--sizes 10000` now, `--sizes 500000` later; `--fresh` starts over.
"""

import os

# One thread everywhere, set before numpy loads its thread pool (peers.py does the same).
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ[var] = "1"

import argparse
import gc
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import Timer, best_of, point, qps_at, read_vecs, recall_at_k, rss_bytes, write_ivecs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
K = 10
TARGET = 0.95
EFS = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256]  # 192, 256: at 500k recall 0.95 may need them
REAL = Path("/work/shared/datasets/minilm-text")
ANN_BENCH = ROOT / "target/release/examples/ann_bench"
LIBS = {  # --only key: (label, quantized?)
    "flowvec": ("flowvec", False),
    "int8": ("flowvec int8 walk", False),
    "hnswlib": ("hnswlib", False),
    "glass": ("glass SQ8U+FP32 rerank", True),
    "symqg": ("SymphonyQG (rabitqlib)", True),
}

# The generator. Changing anything here changes the data: bump "version" (cached files and
# results measured on older data are then dropped).
GEN = {
    "version": 1,
    "seed": 20261125,
    "dim": 384,
    "topics": 50,       # T: coarse directions
    "centres": 2000,    # C: mixture components, each under one topic
    "alpha": 0.3,       # spectrum s_j ∝ (j+1)^-alpha, j = 0..dim-1, scaled to unit sum of squares
    "mu": 0.4,          # weight of the shared mean direction m in every centre
    "tau": 0.8,         # spread of a centre around its topic
    "sigma": 1.0,       # median spread of a point around its centre
    "v": 0.5,           # per-point spread = sigma * exp(v * N(0,1))
    "wlog": 0.8,        # component weights ∝ exp(wlog * N(0,1))
    "chunk": 50_000,    # base rows are drawn in chunks of this many, chunk i from its own stream
    "queries": 1000,
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg():
    return float(open("/proc/loadavg").read().split()[0])


# ---------------------------------------------------------------------------------------------
# Data.


def mixture(g=GEN):
    """The fixed mixture: rotation U, spectrum s, centres, weights. Draw order is part of the spec."""
    rng = np.random.default_rng(g["seed"])
    d, T, C = g["dim"], g["topics"], g["centres"]
    U, _ = np.linalg.qr(rng.standard_normal((d, d)))            # random orthonormal basis
    s = (1.0 + np.arange(d)) ** -g["alpha"]
    s /= np.sqrt((s ** 2).sum())                                 # E|U (s*z)|^2 = 1 for z ~ N(0, I)
    m = rng.standard_normal(d)
    m /= np.linalg.norm(m)                                       # shared mean direction
    topics = U @ (s[:, None] * rng.standard_normal((d, T)))      # d x T
    topic_of = rng.integers(0, T, C)
    cen = topics[:, topic_of] + g["tau"] * (U @ (s[:, None] * rng.standard_normal((d, C))))
    cen = cen.T + g["mu"] * m
    cen /= np.linalg.norm(cen, axis=1, keepdims=True)            # C x d unit centres
    w = np.exp(g["wlog"] * rng.standard_normal(C))
    w /= w.sum()
    return U, s, cen, w


def draw(mix, rng, k, g=GEN):
    """k points: label ~ w, x = normalise(centre + sigma*exp(v*N(0,1)) * U (s * N(0, I)))."""
    U, s, cen, w = mix
    labels = rng.choice(len(w), size=k, p=w)
    scale = g["sigma"] * np.exp(g["v"] * rng.standard_normal((k, 1)))
    X = cen[labels] + scale * ((rng.standard_normal((k, g["dim"])) * s) @ U.T)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X.astype(np.float32)


def write_fvecs(f, X):
    X = np.ascontiguousarray(X, dtype="<f4")
    out = np.empty((X.shape[0], X.shape[1] + 1), dtype="<i4")
    out[:, 0] = X.shape[1]
    out[:, 1:] = X.view("<i4")
    out.tofile(f)


def exact_topk(Q, B, k=K, block=65_536):
    """Exact top-k by inner product: float32 matmul per block of the base, argpartition, then a
    merge with the best so far; rows sorted by score descending, ties to the smaller id."""
    nq = len(Q)
    best_s = np.full((nq, 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((nq, 0), dtype=np.int64)
    for start in range(0, len(B), block):
        S = Q @ B[start:start + block].T
        kk = min(k, S.shape[1])
        part = np.argpartition(-S, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(S, part, 1)], 1)
        cand_i = np.concatenate([best_i, part + start], 1)
        order = np.lexsort((cand_i, -cand_s), axis=1)[:, :k]
        best_s = np.take_along_axis(cand_s, order, 1)
        best_i = np.take_along_axis(cand_i, order, 1)
    return best_i.astype(np.int32)


def dataset(key, cache):
    """Returns {name, kind, n, base, queries, gt (paths)} for a size key ("43000" = the real set,
    "10000", "43000g", "500000" = generated), generating and caching generated sets."""
    if key == "43000":
        return {"key": key, "name": "minilm-text (real)", "kind": "real", "n": 43_000,
                "base": REAL / "base.fvecs", "queries": REAL / "dev_queries.fvecs", "gt": REAL / "dev_gt.ivecs"}
    n = int(key.rstrip("g"))
    folder = cache / f"gen-{n}"
    paths = {"key": key, "name": f"generated {n:,}", "kind": "generated", "n": n,
             "base": folder / "base.fvecs", "queries": folder / "queries.fvecs", "gt": folder / "gt.ivecs"}
    stamp = folder / "params.json"
    want = json.dumps(dict(GEN, n=n), sort_keys=True)
    if stamp.exists() and stamp.read_text() == want and all(paths[p].exists() for p in ("base", "queries", "gt")):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    log(f"generating {n:,} x {GEN['dim']} (seed {GEN['seed']}) into {folder}")
    t0 = time.time()
    mix = mixture()
    chunks = []
    with open(paths["base"], "wb") as f:
        for i in range((n + GEN["chunk"] - 1) // GEN["chunk"]):
            X = draw(mix, np.random.default_rng([GEN["seed"], 1, i]), GEN["chunk"])
            X = X[:n - i * GEN["chunk"]]
            write_fvecs(f, X)
            chunks.append(X)
    B = np.concatenate(chunks)
    del chunks
    Q = draw(mix, np.random.default_rng([GEN["seed"], 2]), GEN["queries"])
    with open(paths["queries"], "wb") as f:
        write_fvecs(f, Q)
    log(f"  generated in {time.time() - t0:.0f} s; exact top-{K} ground truth")
    t0 = time.time()
    write_ivecs(paths["gt"], exact_topk(Q, B))
    log(f"  ground truth in {time.time() - t0:.0f} s")
    stamp.write_text(want)
    return paths


def describe(B, Q, gt):
    """A few statistics to compare generated data with the real set."""
    mean = B.mean(0)
    sample = B[np.random.default_rng(0).choice(len(B), min(len(B), 20_000), replace=False)]
    ev = np.sort(np.linalg.eigvalsh(np.cov((sample - mean).T)))[::-1]
    rand = Q @ B[np.random.default_rng(1).choice(len(B), min(len(B), 5_000), replace=False)].T
    top1 = np.einsum("ij,ij->i", Q, B[gt[:, 0]])
    top10 = np.einsum("ij,ij->i", Q, B[gt[:, K - 1]])
    out = {"mean_norm": float(np.linalg.norm(mean)), "top_eig_frac": float(ev[0] / ev.sum()),
           "var_frac_top32": float(ev[:32].sum() / ev.sum()), "var_frac_top128": float(ev[:128].sum() / ev.sum()),
           "nn1_cos_median": float(np.median(top1)), "nn10_cos_median": float(np.median(top10)),
           "random_pair_cos_median": float(np.median(rand))}
    return out


# ---------------------------------------------------------------------------------------------
# Libraries. Each returns {"build_cpu_s", "build_wall_s", "mem_bytes", "points": [...], and
# optionally "threads": {"1": {...}, "2": {...}}}.


def ann_bench_help():
    p = subprocess.run([str(ANN_BENCH), "--help"], capture_output=True, text=True)
    return p.stdout + p.stderr


def run_ann_bench(ds, efs, repeat, extra, tag, out):
    cmd = [str(ANN_BENCH), "--base", str(ds["base"]), "--queries", str(ds["queries"]), "--gt", str(ds["gt"]),
           "--metric", "cosine", "--ef", ",".join(map(str, efs)), "--m", "16", "--ef-construction", "200",
           "--exact-threshold", "0", "--repeat", str(repeat)] + extra
    log("  " + " ".join(cmd))
    for attempt in (1, 2):
        load = loadavg()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode == 0:
            break
        err = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        if attempt == 2:
            raise RuntimeError(f"ann_bench exited with {proc.returncode}: {' | '.join(err)}")
        # A concurrent `cargo build` may be replacing the binary: wait and try once more.
        log(f"  ann_bench exited with {proc.returncode} ({' | '.join(err)}); retrying in 60 s")
        time.sleep(60)
    text = proc.stdout
    (out / f"ann_bench_{ds['key']}_{tag}.txt").write_text(" ".join(cmd) + "\n" + text)

    def num(key):
        m = re.search(rf"\b{key}=([0-9.]+)", text)
        return float(m.group(1)) if m else None

    res = {"build_wall_s": num("build_s"), "build_cpu_s": num("build_cpu_s"), "mem_bytes": num("mem_mb") * 1e6,
           "process_cpu_s": num("process_cpu_s"), "load_before": load, "points": []}
    wall = {}
    for line in text.splitlines():
        m = re.match(r"ef=(\d+) recall@10=([0-9.]+) qps=([0-9.]+)", line)
        if m:
            wall[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
        m = re.match(r"cpu ef=(\d+) qps_cpu=([0-9.]+)", line)
        if m:
            ef = int(m.group(1))
            res["points"].append({"ef": ef, "recall": wall[ef][0], "qps": wall[ef][1], "qps_cpu": float(m.group(2))})
    if not res["points"]:  # no CPU lines: wall-clock only
        res["points"] = [{"ef": ef, "recall": r, "qps": q, "qps_cpu": q} for ef, (r, q) in sorted(wall.items())]
    return res


def run_flowvec(ds, efs, args, out, int8, threads_flag):
    extra = ["--traversal", "int8"] if int8 else []
    one = ["--build-threads", "1"] if threads_flag else []
    tag = "int8" if int8 else "exact"
    r = run_ann_bench(ds, efs, args.repeat, extra + one, tag + "_t1", out)
    if threads_flag and not int8 and not args.no_threads:
        def trial(x):
            return {"build_wall_s": x["build_wall_s"], "process_cpu_s": x["process_cpu_s"],
                    "recall_ef64": recall_at(x["points"], 64), "load_before": x["load_before"]}

        trials = {1: [trial(r)], 2: []}
        for i in range(max(1, args.thread_rounds)):
            sfx = f"_r{i + 1}" if i else ""
            if i:
                trials[1].append(trial(run_ann_bench(ds, [64], 1, ["--build-threads", "1"], tag + "_t1" + sfx, out)))
            trials[2].append(trial(run_ann_bench(ds, [64], 1, ["--build-threads", "2"], tag + "_t2" + sfx, out)))
        r["threads"] = best_trials(trials)
    return r


def best_trials(trials):
    """Per thread count, the fastest build of its trials (and all of them)."""
    return {str(t): dict(min(v, key=lambda x: x["build_wall_s"]), trials=v) for t, v in trials.items()}


def recall_at(points, ef):
    return next((p["recall"] for p in points if p["ef"] == ef), None)


def sweep(search, queries, gt, efs, set_ef, repeat):
    pts = []
    for ef in efs:
        set_ef(ef)
        wall, cpu, ids = best_of(repeat, search)
        pts.append(point(ef, recall_at_k(ids, gt), len(queries), wall, cpu))
    return pts


def run_hnswlib(B, Q, gt, efs, args):
    import hnswlib

    n, dim = B.shape

    def build(threads):
        gc.collect()
        before = rss_bytes()
        load = loadavg()
        index = hnswlib.Index(space="cosine", dim=dim)
        with Timer() as t:
            index.init_index(max_elements=n, ef_construction=200, M=16, random_seed=100)
            index.add_items(B, np.arange(n), num_threads=threads)
        index.set_num_threads(1)
        return index, t, rss_bytes() - before, load

    index, t, mem, load = build(1)
    out = {"build_cpu_s": t.cpu, "build_wall_s": t.wall, "mem_bytes": mem, "load_before": load}
    out["points"] = sweep(lambda: index.knn_query(Q, k=K, num_threads=1)[0], Q, gt, efs, index.set_ef, args.repeat)
    if not args.no_threads:
        trials = {1: [{"build_wall_s": t.wall, "process_cpu_s": t.cpu,
                       "recall_ef64": recall_at(out["points"], 64), "load_before": load}], 2: []}
        for i in range(max(1, args.thread_rounds)):
            for threads in ((1, 2) if i else (2,)):
                del index
                index, tt, _, ld = build(threads)
                index.set_ef(64)
                trials[threads].append({"build_wall_s": tt.wall, "process_cpu_s": tt.cpu, "load_before": ld,
                                        "recall_ef64": recall_at_k(index.knn_query(Q, k=K, num_threads=1)[0], gt)})
        out["threads"] = best_trials(trials)
    del index
    return out


def run_glass(B, Q, gt, efs, args):
    import glass

    glass.set_num_threads(1)
    gc.collect()
    before = rss_bytes()
    load = loadavg()
    with Timer() as t:
        builder = glass.Index("HNSW", metric="IP", quant="FP32", R=32, L=200)  # R=32: M=16
        graph = builder.build(B)
        del builder
        searcher = glass.Searcher(graph, B, "IP", "SQ8U", "FP32")
        with Timer() as t_opt:
            searcher.optimize(1)  # tunes prefetching on sample searches: a fixed cost of a few seconds
    mem = rss_bytes() - before
    out = {"build_cpu_s": t.cpu, "build_wall_s": t.wall, "mem_bytes": mem, "load_before": load,
           "optimize_cpu_s": t_opt.cpu}
    out["points"] = sweep(lambda: searcher.batch_search(Q, K, 1)[0], Q, gt, efs, searcher.set_ef, args.repeat)
    del searcher, graph
    return out


def run_symqg(B, Q, gt, efs, args):
    import rabitqlib

    gc.collect()
    before = rss_bytes()
    load = loadavg()
    with Timer() as t:
        index = rabitqlib.SymqgIndex(B.shape[1], 32, metric="ip", quantization_bits=8)
        index.build(B, 200, num_threads=1)
    mem = rss_bytes() - before
    out = {"build_cpu_s": t.cpu, "build_wall_s": t.wall, "mem_bytes": mem, "load_before": load}
    ef_box = [0]
    out["points"] = sweep(lambda: index.search(Q, K, ef_box[0], num_threads=1)[0], Q, gt, efs,
                          lambda ef: ef_box.__setitem__(0, ef), args.repeat)
    del index
    return out


# ---------------------------------------------------------------------------------------------
# Report.


def fmt(x, digits=0):
    return "—" if x is None else f"{x:,.{digits}f}"


def cpu_info():
    info = {}
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in text.splitlines():
            k, _, v = line.partition(":")
            info[k.strip()] = v.strip()
    except OSError:
        pass
    return {"model": info.get("Model name", "?"), "family": info.get("CPU family", "?"),
            "model_id": info.get("Model", "?"), "l3": info.get("L3 cache", "?"), "cpus": info.get("CPU(s)", "?"),
            "hypervisor": info.get("Hypervisor vendor")}


def size_order(key):
    return (int(key.rstrip("g")), key.endswith("g"))


def summary_row(r, n):
    t = r.get("threads", {})
    w1 = t.get("1", {}).get("build_wall_s")
    w2 = t.get("2", {}).get("build_wall_s")

    def cores(x):
        return x["process_cpu_s"] / x["build_wall_s"] if x.get("process_cpu_s") and x.get("build_wall_s") else None

    return {
        "cores1": cores(t.get("1", {})),
        "cores2": cores(t.get("2", {})),
        "build_s": r["build_cpu_s"] if r.get("build_cpu_s") else r["build_wall_s"],
        "rate1": n / w1 if w1 else n / r["build_wall_s"],
        "rate2": n / w2 if w2 else None,
        "ratio": w1 / w2 if w1 and w2 else None,
        "mem_mb": r["mem_bytes"] / 1e6,
        "bpv": r["mem_bytes"] / n,
        "qps95": qps_at(r["points"], TARGET, "qps_cpu"),
        "r64": recall_at(r["points"], 64),
        "r64_t2": t.get("2", {}).get("recall_ef64"),
    }


def glass_opt(res):
    parts = [f"{e['libs']['glass']['optimize_cpu_s']:.1f} s on {e['name']}"
             for k, e in sorted(res["sizes"].items(), key=lambda kv: size_order(kv[0]))
             if "optimize_cpu_s" in e["libs"].get("glass", {})]
    return f" ({', '.join(parts)})" if parts else ""


def ratio_cell(s):
    if not s["ratio"]:
        return "—"
    cores = ""
    if s["cores1"] and s["cores2"]:
        contended = ", contended" if s["cores2"] < 1.8 else ""
        cores = f" ({s['cores1']:.2f} → {s['cores2']:.2f} cores{contended})"
    return f"{s['ratio']:.2f}×{cores}"


def extended_efs(res):
    """Names the runs whose sweep went past ef 128 (runs made with `--efs` up to 128 stop there)."""
    more, beyond = [], set()
    for key in sorted(res["sizes"], key=size_order):
        e = res["sizes"][key]
        for lib, (label, _) in LIBS.items():
            efs = {p["ef"] for p in e["libs"].get(lib, {}).get("points", []) if p["ef"] > 128}
            if efs:
                more.append(f"{label} at {e['n']:,}")
                beyond |= efs
    return f", and on to {', '.join(map(str, sorted(beyond)))} for {', '.join(more)}" if more else ""


def report(res):
    meta = res["meta"]
    cpu = meta["cpu"]
    g = GEN
    lines = [
        "# Scaling: build time, memory and QPS against n",
        "",
        f"One run per size and library (no rounds), measured {', '.join(sorted(set(meta['runs'])))} UTC "
        f"on {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}; {cpu['cpus']} CPUs"
        f"{', ' + cpu['hypervisor'] + ' guest' if cpu.get('hypervisor') else ''}), L3 {cpu['l3']}; "
        "the machine is shared with other jobs. flowvec at "
        f"{' and '.join(sorted({r.get('flowvec_rev', '?') for e in res['sizes'].values() for k, r in e['libs'].items() if k in ('flowvec', 'int8')})) or '—'}.",
        "",
        "M=16 (hnswlib, flowvec), efConstruction=200; glass: HNSW graph R=32 (= 2M, so M=16), L=200, searched "
        "with SQ8U codes and an FP32 rerank; SymphonyQG: degree 32, ef_construction 200, 8-bit RaBitQ codes. "
        f"Queries on one thread, recall@10, ef swept over {', '.join(map(str, EFS[:8]))}{extended_efs(res)}; QPS from CPU "
        f"time, best of {meta['repeat']} passes, and QPS at recall {TARGET} interpolated between the sweep "
        "points around it (log QPS); when the smallest ef already exceeds it, that point's QPS (a lower bound).",
        "",
        "- **build s**: one thread, CPU seconds (flowvec: the building thread's CPU time, one "
        "`DenseIndex::insert_batch` call on one thread, `ann_bench --build-threads 1`, when the binary "
        "has the flag; the Python libraries: process CPU time). glass's includes building its searcher "
        "(SQ8U codes) and `optimize()`, a fixed cost" + glass_opt(res) + ".",
        "- **build vec/s, 1 and 2 threads**: wall clock, the 2-thread build run right after the 1-thread "
        "one (flowvec: `ann_bench --build-threads 2`; hnswlib: `add_items(num_threads=2)`), ratio = 2-thread "
        "rate / 1-thread rate (with `--thread-rounds N`, N alternating pairs, fastest of each); in brackets the "
        "cores each build got (process CPU seconds / wall seconds: 2.0 would be two whole cores). On this "
        "2-core machine shared with other jobs, a 2-thread build gets less than two cores whenever "
        "another job runs, and its wall-clock ratio shows that rather than the library's scaling. The "
        "last column gives recall@10 at ef 64 of each build.",
        "- **memory**: flowvec: heap bytes the build allocated and still holds (`ann_bench`'s counting "
        "allocator; the vectors included); Python libraries: growth of the process's resident set over "
        "the build (after `malloc_trim`), which also includes the index's copy of the vectors.",
        "",
        "| n | dataset | library | build s (1 thread) | build vec/s, 1 thread | 2 threads | 2t / 1t | "
        "memory MB | bytes / vector | QPS @ recall 0.95 | recall@10 at ef 64 (1t build / 2t build) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for key in sorted(res["sizes"], key=size_order):
        entry = res["sizes"][key]
        n = entry["n"]
        rows = {}
        for lib, (label, _) in LIBS.items():
            r = entry["libs"].get(lib)
            if r is None:
                continue
            s = rows[lib] = summary_row(r, n)
            r64 = fmt(s["r64"], 3) + (f" / {s['r64_t2']:.3f}" if s["r64_t2"] is not None else "")
            lines.append(
                f"| {n:,} | {entry['kind']} | {label} | {fmt(s['build_s'], 1)} | {fmt(s['rate1'])} | "
                f"{fmt(s['rate2'])} | {ratio_cell(s)} | {fmt(s['mem_mb'], 1)} | "
                f"{fmt(s['bpv'])} | {fmt(s['qps95'])} | {r64} |")
        ratios.append((key, entry, rows))
    lines += ["", "Ratios at each size (>1: flowvec better; memory: peer bytes / flowvec bytes). "
              "\"best quantized\" = the quantized peer with the higher QPS at recall 0.95.", "",
              "| n | dataset | flowvec / hnswlib: build, memory, QPS@0.95 | int8 walk / hnswlib: build, memory, "
              "QPS@0.95 | flowvec / best quantized: build, memory, QPS@0.95 | int8 walk / best quantized: QPS@0.95 |",
              "|---|---|---|---|---|---|"]

    def rat(a, b, key, inv=False):
        if a is None or b is None or a.get(key) is None or b.get(key) is None or not a[key] or not b[key]:
            return "—"
        x = b[key] / a[key] if inv else a[key] / b[key]
        return f"{x:.2f}×"

    for key, entry, rows in ratios:
        fv, q8, hl = rows.get("flowvec"), rows.get("int8"), rows.get("hnswlib")
        quant = [rows[k] | {"name": LIBS[k][0]} for k in ("glass", "symqg") if k in rows and rows[k]["qps95"]]
        bq = max(quant, key=lambda s: s["qps95"]) if quant else None

        def triple(a, b):
            return f"{rat(a, b, 'build_s', inv=True)}, {rat(a, b, 'bpv', inv=True)}, {rat(a, b, 'qps95')}"

        lines.append(f"| {entry['n']:,} | {entry['kind']} | {triple(fv, hl)} | {triple(q8, hl)} | "
                     f"{triple(fv, bq)}{' (' + bq['name'] + ')' if bq else ''} | {rat(q8, bq, 'qps95')} |")

    lines += ["", "## Data", "",
              "- **real**: `minilm-text` (43,000 all-MiniLM-L6-v2 embeddings of English passages, 384-d, unit "
              "length; its 1,000 dev queries and their exact ground truth).",
              f"- **generated** (version {g['version']}): a fixed Gaussian mixture on the unit sphere in "
              f"d = {g['dim']}, numpy `default_rng`, seed {g['seed']}. With `rng = default_rng({g['seed']})`, "
              "in this order: a random orthonormal basis U = `qr(rng.standard_normal((d, d)))[0]`; a spectrum "
              f"s_j = (j+1)^-{g['alpha']} (j = 0…d-1) scaled so that Σ s_j² = 1, so a draw U(s∘z), z ~ N(0, I), "
              "has unit expected norm and most of its variance in the leading directions (the anisotropy of "
              f"text embeddings); a shared mean direction m (a normalised Gaussian); {g['topics']} topic "
              f"vectors t = U(s∘z); for each of C = {g['centres']:,} centres a uniformly drawn topic, then "
              f"centre = normalise(t + {g['tau']}·U(s∘z) + {g['mu']}·m); mixture weights ∝ exp({g['wlog']}·N(0,1)) "
              "(uneven cluster sizes). A point: a centre drawn by weight, then x = normalise(centre + "
              f"σ·U(s∘z)) with a per-point spread σ = {g['sigma']}·exp({g['v']}·N(0,1)) (drawn in that order: "
              "labels, spreads, noise, for a whole block at once). Base rows come in blocks of "
              f"{g['chunk']:,}, block i from `default_rng([{g['seed']}, 1, i])`, so every generated set is a "
              f"prefix of the larger ones (more data from the same distribution); the {g['queries']:,} "
              f"queries come from `default_rng([{g['seed']}, 2])` (so are not in the base). Ground truth: "
              "exact top-10 by inner product (float32 matmul in blocks, argpartition, ties to the smaller id). "
              "The parameters were picked so that the generated 43k resembles the real set (below).",
              "", "| dataset | mean vector norm | top eigenvalue / total variance | variance in top 32 / 128 "
              "directions | median cosine of query to its 1st / 10th neighbour | median random cosine |",
              "|---|---|---|---|---|---|"]
    for key in sorted(res["sizes"], key=size_order):
        e = res["sizes"][key]
        st = e.get("stats")
        if st:
            lines.append(f"| {e['name']} | {st['mean_norm']:.2f} | {st['top_eig_frac']:.3f} | "
                         f"{st['var_frac_top32']:.2f} / {st['var_frac_top128']:.2f} | "
                         f"{st['nn1_cos_median']:.2f} / {st['nn10_cos_median']:.2f} | "
                         f"{fmt(st.get('random_pair_cos_median'), 2)} |")
    lines += ["", "## Sweep (every point)", "", "| n | dataset | library | ef | recall@10 | QPS (CPU) | QPS (wall) |",
              "|---|---|---|---|---|---|---|"]
    for key in sorted(res["sizes"], key=size_order):
        e = res["sizes"][key]
        for lib, (label, _) in LIBS.items():
            r = e["libs"].get(lib)
            for p in (r or {}).get("points", []):
                lines.append(f"| {e['n']:,} | {e['kind']} | {label} | {p['ef']} | {p['recall']:.4f} | "
                             f"{fmt(p['qps_cpu'])} | {fmt(p['qps'])} |")
    return "\n".join(lines) + "\n"


def plot(res, paths):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    panels = [("build_s", "build time, one thread (CPU s)", True),
              ("bpv", "memory per vector (bytes)", False),
              ("qps95", f"QPS at recall@10 {TARGET} (one thread)", True)]
    colours = dict(zip(LIBS, ["C0", "C1", "C2", "C3", "C4"]))
    keys = sorted(res["sizes"], key=size_order)
    for ax, (field, title, logy) in zip(axes, panels):
        for lib, (label, _) in LIBS.items():
            gen, real = [], []
            for key in keys:
                e = res["sizes"][key]
                if lib in e["libs"]:
                    v = summary_row(e["libs"][lib], e["n"])[field]
                    if v is not None:
                        (real if e["kind"] == "real" else gen).append((e["n"], v))
            if gen:
                ax.plot(*zip(*gen), marker="o", color=colours[lib], label=label,
                        lw=2.5 if lib in ("flowvec", "int8") else 1.5)
            if real:
                ax.plot(*zip(*real), marker="*", ms=13, ls="none", color=colours[lib],
                        label=None if gen else label)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel("n (vectors)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("384-d, M=16, efC=200. Lines: generated clustered data; ★: the real minilm-text 43k set",
                 fontsize=10)
    fig.tight_layout()
    for p in paths:
        fig.savefig(p, dpi=100)


# ---------------------------------------------------------------------------------------------


def save_reports(res, json_path, out, args):
    json_path.write_text(json.dumps(res, indent=1))
    md = report(res)
    (out / "scaling.md").write_text(md)
    pngs = [out / "scaling.png"]
    if args.docs:
        Path(args.docs).mkdir(parents=True, exist_ok=True)
        pngs.append(Path(args.docs) / "scaling.png")
        (Path(args.docs) / "scaling.md").write_text(md.replace(
            "# Scaling: build time, memory and QPS against n\n",
            "# Scaling: build time, memory and QPS against n\n\n![scaling](scaling.png)\n", 1))
    plot(res, pngs)
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,43000,500000",
                    help="comma list; 43000 = the real minilm-text set, other numbers (and 43000g) = generated")
    ap.add_argument("--only", default=",".join(LIBS), help="comma list: " + ",".join(LIBS))
    ap.add_argument("--repeat", type=int, default=2, help="query passes per ef, best counts")
    ap.add_argument("--efs", default=",".join(map(str, EFS)))
    ap.add_argument("--no-threads", action="store_true", help="skip the 2-thread builds")
    ap.add_argument("--thread-rounds", type=int, default=1,
                    help="alternating 1-thread/2-thread build pairs (the first 1-thread build is the main one); "
                         "the fastest of each counts")
    ap.add_argument("--fresh", action="store_true", help="ignore results of earlier runs in scaling.json")
    ap.add_argument("--out", default=str(ROOT / "target/scaling"))
    ap.add_argument("--docs", default=str(ROOT / "docs/peers"), help="where scaling.md/png go ('' to skip)")
    ap.add_argument("--no-cargo", action="store_true", help="use the ann_bench binary as it is")
    ap.add_argument("--report-only", action="store_true", help="rewrite the reports from scaling.json, measure nothing")
    args = ap.parse_args()
    started = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "data"
    efs = [int(x) for x in args.efs.split(",")]
    only = [x for x in args.only.split(",") if x]
    unknown = set(only) - set(LIBS)
    if unknown:
        ap.error(f"unknown library {', '.join(sorted(unknown))}")
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()] if not args.report_only else []

    threads_flag = False
    if {"flowvec", "int8"} & set(only) and sizes:
        if not args.no_cargo:
            log("cargo build --release --example ann_bench")
            if subprocess.run(["cargo", "build", "--release", "--example", "ann_bench"], cwd=ROOT).returncode:
                if not ANN_BENCH.exists():
                    sys.exit("ann_bench does not build and there is no earlier binary")
                log("WARNING: cargo build failed; using the existing ann_bench binary")
        threads_flag = "--build-threads" in ann_bench_help()
        if not threads_flag:
            log("ann_bench has no --build-threads: flowvec's 2-thread build column stays empty")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "src", "examples", "Cargo.toml"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    flowvec_rev = f"{rev}{' + uncommitted changes' if dirty else ''}"

    json_path = out / "scaling.json"
    res = None
    if json_path.exists() and not args.fresh:
        res = json.loads(json_path.read_text())
        if res.get("meta", {}).get("gen") != GEN:  # generated data changed: drop its results
            res["sizes"] = {k: v for k, v in res.get("sizes", {}).items() if v["kind"] == "real"}
    if res is None:
        res = {"meta": {}, "sizes": {}}
    stamp = time.strftime("%Y-%m-%d", time.gmtime(started))
    if args.report_only:
        print(save_reports(res, json_path, out, args))
        return
    res["meta"].update({"gen": GEN, "cpu": cpu_info(), "efs": EFS, "repeat": args.repeat})
    res["meta"]["runs"] = sorted(set(res["meta"].get("runs", [])) | {stamp})

    def save():
        return save_reports(res, json_path, out, args)

    for key in sizes:
        ds = dataset(key, cache)
        B = read_vecs(ds["base"], np.float32)
        Q = read_vecs(ds["queries"], np.float32)
        gt = read_vecs(ds["gt"], np.int32)[:, :K]
        entry = res["sizes"].setdefault(key, {"libs": {}})
        entry.update({"n": len(B), "kind": ds["kind"], "name": ds["name"], "nq": len(Q)})
        entry["stats"] = describe(B, Q, gt)
        log(f"== {ds['name']}: {len(B):,} x {B.shape[1]}, {len(Q):,} queries; stats {entry['stats']}")
        for lib in only:
            log(f"{LIBS[lib][0]} at {len(B):,}")
            t0 = time.time()
            try:
                if lib in ("flowvec", "int8"):
                    r = run_flowvec(ds, efs, args, out, lib == "int8", threads_flag)
                else:
                    r = {"hnswlib": run_hnswlib, "glass": run_glass, "symqg": run_symqg}[lib](B, Q, gt, efs, args)
            except Exception as e:  # noqa: BLE001 - one library failing must not lose the others
                log(f"  FAILED: {e!r}")
                continue
            r["measured"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
            r["efs"] = efs
            r["repeat"] = args.repeat
            if lib in ("flowvec", "int8"):
                r["flowvec_rev"] = flowvec_rev
            entry["libs"][lib] = r
            s = summary_row(r, len(B))
            log(f"  {time.time() - t0:.0f} s: build {s['build_s']:.1f} s, {s['rate1']:.0f} vec/s"
                + (f" (2 threads {s['rate2']:.0f}, {s['ratio']:.2f}x)" if s["ratio"] else "")
                + f", {s['bpv']:.0f} B/vector, QPS@0.95 {fmt(s['qps95'])}, recall@ef64 {fmt(s['r64'], 4)}")
            save()
        del B, Q, gt
        gc.collect()
    md = save()
    print(md)
    log(f"done in {(time.time() - started) / 60:.1f} min: {out / 'scaling.md'}"
        + (f", {Path(args.docs) / 'scaling.md'}" if args.docs else ""))


if __name__ == "__main__":
    main()
