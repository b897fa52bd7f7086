"""Writes N upsert bodies of B real vectors each (minilm-text base.fvecs) for wrk.lua, and N
query bodies (q<i>.json: top-10 of one of those vectors)."""
import json, struct, sys, os

path, out, n, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
with open(path, "rb") as f:
    data = f.read()
dim = struct.unpack_from("<i", data, 0)[0]
row = 4 + 4 * dim
for i in range(n):
    recs = []
    for j in range(b):
        k = i * b + j
        v = struct.unpack_from(f"<{dim}f", data, k * row + 4)
        recs.append({"id": f"v{k}", "vector": [round(x, 7) for x in v]})
    with open(f"{out}/{i}.json", "w") as f:
        json.dump(recs, f)
    with open(f"{out}/q{i}.json", "w") as f:
        json.dump({"vector": recs[0]["vector"], "topK": 10}, f)
