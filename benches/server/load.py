"""Loads a server: `upsert N` puts the first N vectors of base.fvecs in batches of 100 (4 threads);
`tail-upsert N` sends N single-vector upserts replacing existing ids; `tail-publish N RECV` sends
N publishes under a paused key (each one log entry, nothing delivered); one request at a time,
to build a log tail of N entries. Prints the rate."""
import json, struct, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor

url, path, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with open(path, "rb") as f:
    data = f.read()
dim = struct.unpack_from("<i", data, 0)[0]
row = 4 + 4 * dim
vec = lambda k: list(struct.unpack_from(f"<{dim}f", data, k * row + 4))

def post(path, body, headers=None):
    req = urllib.request.Request(url + path, data=body, method="POST")
    req.add_header("Authorization", "Bearer bench")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.status < 300, r.status
        return r.read()

t0 = time.time()
if mode == "upsert":
    def batch(i):
        recs = [{"id": f"v{k}", "vector": vec(k)} for k in range(i, min(i + 100, n))]
        post("/upsert", json.dumps(recs).encode())
    with ThreadPoolExecutor(4) as ex:
        list(ex.map(batch, range(0, n, 100)))
elif mode == "tail-upsert":
    for i in range(n):
        k = (i * 7919) % 43000
        post("/upsert", json.dumps([{"id": f"v{k}", "vector": vec(k)}]).encode())
else:
    recv = sys.argv[5]
    post("/v2/flowControl/tail/pause", b"")
    for i in range(n - 1):
        post(f"/v2/publish/http://127.0.0.1:{recv}/tail", b"x" * 100,
             {"Upstash-Flow-Control-Key": "tail", "Upstash-Flow-Control-Value": "rate=1000"})
dt = time.time() - t0
print(f"{mode} {n}: {dt:.1f} s ({n / dt:.0f}/s)")
