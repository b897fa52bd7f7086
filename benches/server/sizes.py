"""Data directory size per vector and per waiting message. argv: BIN WORKDIR base.fvecs RECV."""
import json, os, re, signal, struct, subprocess, sys, time, urllib.request

bin_, work, path, recv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
os.makedirs(work, exist_ok=True)
with open(path, "rb") as f:
    data = f.read()
dim = struct.unpack_from("<i", data, 0)[0]
row = 4 + 4 * dim

def start(d):
    log = open(d + ".log", "w")
    p = subprocess.Popen([bin_, "--port", "0", "--token", "bench", "--dimension", "384",
                          "--data-dir", d, "--snapshot-every", "100000000"], stdout=log, stderr=log)
    for _ in range(600):
        m = re.search(r"listening on http://127.0.0.1:(\d+)", open(d + ".log").read())
        if m:
            return p, f"http://127.0.0.1:{m.group(1)}"
        time.sleep(0.1)
    raise SystemExit("server did not start")

def post(url, body, headers=None):
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Authorization", "Bearer bench")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read()

def files(d):
    return {n: os.path.getsize(os.path.join(d, n)) for n in sorted(os.listdir(d))}

def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(60)

# Vectors.
n = 20000
d = os.path.join(work, "vectors")
p, url = start(d)
for i in range(0, n, 100):
    recs = [{"id": f"v{k}", "vector": list(struct.unpack_from(f"<{dim}f", data, k * row + 4))}
            for k in range(i, i + 100)]
    post(url + "/upsert", json.dumps(recs).encode())
live = files(d)
stop(p)
after = files(d)
snap = sum(v for k, v in after.items() if k.startswith("snapshot-"))
print(f"- {n} vectors of 384-d: log before the snapshot {live['log.redb'] / n:.0f} B/vector "
      f"(log.redb {live['log.redb'] / 2**20:.1f} MiB); snapshot {snap / n:.0f} B/vector "
      f"({snap / 2**20:.1f} MiB, graph links included); after a clean stop the whole directory is "
      f"{sum(after.values()) / 2**20:.1f} MiB ({sum(after.values()) / n:.0f} B/vector)")

# Waiting messages: a paused key holds them.
m = 10000
d = os.path.join(work, "messages")
p, url = start(d)
post(url + "/v2/flowControl/held/pause", b"")
base = files(d)
for i in range(m):
    post(f"{url}/v2/publish/http://127.0.0.1:{recv}/held", b"x" * 100,
         {"Upstash-Flow-Control-Key": "held", "Upstash-Flow-Control-Value": "parallelism=1"})
live = files(d)
stop(p)
after = files(d)
snap = sum(v for k, v in after.items() if k.startswith("snapshot-"))
print(f"- {m} waiting messages with 100-byte bodies: log {(live['log.redb'] - base['log.redb']) / m:.0f} B/message; "
      f"snapshot {snap / m:.0f} B/message ({snap / 2**20:.2f} MiB)")
