"""A small Python model of the flowvec wire contract, used only to test the e2e tests themselves.

It is NOT flowvec and proves nothing about it: it exists so the tests in `tests/e2e` could be run
and debugged before `flowvec-server` (`server/`) existed (a test that fails against a faithful model is a
broken test). It follows WIRE.md and DESIGN §1-§4 closely enough for that: dense COSINE index,
brute-force search, the filter subset the tests use, and a flow-control dispatcher that delivers
messages with urllib in threads.

    python tests/e2e/tools/fake_server.py --port 8787 --token e2e-test-token --dimension 8
    FLOWVEC_URL=http://127.0.0.1:8787 python -m pytest tests/e2e
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import math
import re
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------------------------------------
# Filter language (subset: comparisons, IN / NOT IN, CONTAINS, GLOB, HAS [NOT] FIELD, AND/OR, ())

TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:\\.|[^'])*'|\"(?:\\.|[^\"])*\")"
    r"|(?P<op><=|>=|!=|=|<|>|\(|\)|,)|(?P<word>[A-Za-z_][A-Za-z0-9_.\[\]#-]*))"
)
KEYWORDS = {"AND", "OR", "IN", "NOT", "CONTAINS", "GLOB", "HAS", "FIELD", "TRUE", "FALSE"}
MISSING = object()


def tokenize(src: str):
    pos, out = 0, []
    src = src.rstrip()
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise HttpError(400, f"filter: unexpected character at column {pos + 1}")
        pos = m.end()
        if m.group("num") is not None:
            out.append(("lit", float(m.group("num"))))
        elif m.group("str") is not None:
            out.append(("lit", re.sub(r"\\(.)", r"\1", m.group("str")[1:-1])))
        elif m.group("op") is not None:
            out.append(("op", m.group("op")))
        else:
            w = m.group("word")
            if w.upper() in ("TRUE", "FALSE"):
                out.append(("lit", w.upper() == "TRUE"))
            elif w.upper() in KEYWORDS:
                out.append(("kw", w.upper()))
            else:
                out.append(("id", w))
    return out


def lookup(meta, path: str):
    cur = meta
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return MISSING
        cur = cur[part]
    return cur


def same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return isinstance(a, str) and isinstance(b, str) and a == b


class FilterParser:
    def __init__(self, src: str) -> None:
        self.toks = tokenize(src)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            raise HttpError(400, f"filter: expected {value or kind} at token {self.i + 1}, got {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self):
        if not self.toks:
            return lambda m: True
        f = self.or_()
        if self.i != len(self.toks):
            raise HttpError(400, f"filter: unexpected {self.peek()[1]!r}")
        return f

    def or_(self):
        parts = [self.and_()]
        while self.peek() == ("kw", "OR"):
            self.take()
            parts.append(self.and_())
        return lambda m: any(p(m) for p in parts)

    def and_(self):
        parts = [self.unary()]
        while self.peek() == ("kw", "AND"):
            self.take()
            parts.append(self.unary())
        return lambda m: all(p(m) for p in parts)

    def literal(self):
        return self.take("lit")[1]

    def unary(self):
        if self.peek() == ("op", "("):
            self.take()
            f = self.or_()
            self.take("op", ")")
            return f
        if self.peek() == ("kw", "HAS"):
            self.take()
            neg = False
            if self.peek() == ("kw", "NOT"):
                self.take()
                neg = True
            self.take("kw", "FIELD")
            path = self.take("id")[1]
            return lambda m: (lookup(m, path) is MISSING) == neg
        path = self.take("id")[1]
        neg = False
        if self.peek() == ("kw", "NOT"):
            self.take()
            neg = True
        kind, val = self.take()
        if kind == "op" and val in ("=", "!=", "<", "<=", ">", ">=") and not neg:
            lit = self.literal()
            return self.compare(path, val, lit)
        if (kind, val) == ("kw", "IN"):
            self.take("op", "(")
            lits = [self.literal()]
            while self.peek() == ("op", ","):
                self.take()
                lits.append(self.literal())
            self.take("op", ")")

            def f(m):
                v = lookup(m, path)
                if v is MISSING or v is None or isinstance(v, (list, dict)):
                    return False
                hit = any(same(v, lit) for lit in lits)
                return not hit if neg else hit

            return f
        if (kind, val) == ("kw", "CONTAINS"):
            lit = self.literal()

            def f(m):
                v = lookup(m, path)
                if not isinstance(v, list):
                    return False
                hit = any(same(x, lit) for x in v)
                return not hit if neg else hit

            return f
        if (kind, val) == ("kw", "GLOB"):
            pat = self.literal()

            def f(m):
                v = lookup(m, path)
                if not isinstance(v, str):
                    return False
                hit = fnmatch.fnmatchcase(v, pat.replace("[^", "[!"))
                return not hit if neg else hit

            return f
        raise HttpError(400, f"filter: unexpected {val!r} after {path}")

    @staticmethod
    def compare(path, op, lit):
        def f(m):
            v = lookup(m, path)
            if v is MISSING or v is None:
                return False
            if op in ("=", "!="):
                if isinstance(v, (list, dict)) or type(v) is bool and not isinstance(lit, bool):
                    return False
                if isinstance(lit, bool) != isinstance(v, bool):
                    return False
                if isinstance(lit, str) != isinstance(v, str):
                    return False
                eq = same(v, lit)
                return eq if op == "=" else not eq
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not isinstance(lit, (int, float)):
                return False
            return {"<": v < lit, "<=": v <= lit, ">": v > lit, ">=": v >= lit}[op]

        return f


# ------------------------------------------------------------------------------------------------
# Vector index (dense COSINE, brute force)


class VectorIndex:
    def __init__(self, dimension: int) -> None:
        self.dim = dimension
        self.lock = threading.Lock()
        self.ns: dict[str, dict[str, dict]] = {"": {}}

    def _vector(self, v) -> list[float]:
        if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise HttpError(400, "vector must be an array of numbers")
        if len(v) != self.dim:
            raise HttpError(422, f"Invalid vector dimension: {len(v)}, expected: {self.dim}")
        if not all(math.isfinite(x) for x in v):
            raise HttpError(400, "vector values must be finite")
        if all(x == 0 for x in v):
            raise HttpError(400, "a COSINE vector must not be the zero vector")
        return [float(x) for x in v]

    def _record(self, r) -> tuple[str, dict]:
        if not isinstance(r, dict) or not isinstance(r.get("id"), (str, int)) or r.get("id") == "":
            raise HttpError(400, "record needs a non-empty id")
        if r.get("sparseVector") is not None:
            raise HttpError(400, "this index is dense: sparseVector is not allowed")
        if r.get("vector") is None:
            raise HttpError(400, "dense index: vector is required")
        meta = r.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise HttpError(400, "metadata must be an object")
        return str(r["id"]), {"vector": self._vector(r["vector"]), "metadata": meta, "data": r.get("data")}

    @staticmethod
    def _out(id_, rec, vec, meta, data, score=None) -> dict:
        o = {"id": id_}
        if score is not None:
            o["score"] = score
        if vec:
            o["vector"] = rec["vector"]
        if meta and rec["metadata"] is not None:
            o["metadata"] = rec["metadata"]
        if data and rec["data"] is not None:
            o["data"] = rec["data"]
        return o

    def handle(self, op: str, ns: str, query: str, body):
        with self.lock:
            space = self.ns.get(ns)
            if op == "upsert":
                recs = body if isinstance(body, list) else [body]
                parsed = [self._record(r) for r in recs]
                space = self.ns.setdefault(ns, {})
                for id_, rec in parsed:
                    space[id_] = rec
                return "Success"
            if op == "query":
                if isinstance(body, list):
                    out = [self._query(space or {}, q) for q in body]
                    return out[0] if len(out) == 1 else out
                return self._query(space or {}, body)
            if op == "fetch":
                space = space or {}
                flags = (body.get("includeVectors"), body.get("includeMetadata"), body.get("includeData"))
                if body.get("ids") is not None:
                    return [self._out(i, space[i], *flags) if i in space else None for i in body["ids"]]
                pre = body.get("prefix", "")
                return [self._out(i, space[i], *flags) for i in sorted(space) if i.startswith(pre)]
            if op == "delete":
                space = space or {}
                if "ids" in body:
                    victims = [i for i in body["ids"] if i in space]
                elif "prefix" in body:
                    victims = [i for i in space if i.startswith(body["prefix"])]
                elif "filter" in body:
                    f = FilterParser(body["filter"]).parse()
                    victims = [i for i, r in space.items() if f(r["metadata"] or {})]
                else:
                    raise HttpError(400, "delete needs ids, prefix or filter")
                for i in victims:
                    del space[i]
                return {"deleted": len(victims)}
            if op == "range":
                space = space or {}
                limit = body.get("limit")
                if not isinstance(limit, int) or limit < 1:
                    raise HttpError(400, "limit must be >= 1")
                cursor = body.get("cursor") or "0"
                start = int(cursor)
                pre = body.get("prefix") or ""
                ids = [i for i in sorted(space) if i.startswith(pre)]
                page = ids[start : start + limit]
                nxt = "" if start + limit >= len(ids) else str(start + limit)
                flags = (body.get("includeVectors"), body.get("includeMetadata"), body.get("includeData"))
                return {"nextCursor": nxt, "vectors": [self._out(i, space[i], *flags) for i in page]}
            if op == "update":
                space = space or {}
                rec = space.get(body.get("id"))
                if rec is None:
                    return {"updated": 0}
                if body.get("vector") is not None:
                    rec["vector"] = self._vector(body["vector"])
                if body.get("data") is not None:
                    rec["data"] = body["data"]
                if body.get("metadata") is not None:
                    if body.get("metadataUpdateMode", "OVERWRITE") == "PATCH":
                        rec["metadata"] = merge_patch(rec["metadata"] or {}, body["metadata"])
                    else:
                        rec["metadata"] = body["metadata"]
                return {"updated": 1}
            if op == "reset":
                if "all" in urllib.parse.parse_qs(query, keep_blank_values=True):
                    self.ns = {"": {}}
                elif ns in self.ns:
                    self.ns[ns] = {}
                return "Success"
            if op == "info":
                nss = {n: {"vectorCount": len(s), "pendingVectorCount": 0} for n, s in self.ns.items()}
                return {
                    "vectorCount": sum(len(s) for s in self.ns.values()),
                    "pendingVectorCount": 0,
                    "indexSize": 0,
                    "dimension": self.dim,
                    "similarityFunction": "COSINE",
                    "indexType": "DENSE",
                    "namespaces": nss,
                }
            if op == "list-namespaces":
                return sorted(self.ns)
            if op == "delete-namespace":
                if ns == "":
                    raise HttpError(400, "the default namespace cannot be deleted")
                if ns not in self.ns:
                    raise HttpError(404, f"Namespace {ns} does not exist")
                del self.ns[ns]
                return "Success"
        raise HttpError(404, f"unknown route /{op}")

    def _query(self, space, q):
        known = {"vector", "sparseVector", "topK", "includeMetadata", "includeVectors", "includeData",
                 "filter", "weightingStrategy", "fusionAlgorithm", "queryMode"}
        for k in q:
            if k not in known:
                raise HttpError(400, f"unknown field {k}")
        if q.get("sparseVector") is not None:
            raise HttpError(400, "this index is dense: sparseVector is not allowed")
        v = self._vector(q.get("vector"))
        k = q.get("topK", 10)
        f = FilterParser(q.get("filter") or "").parse()
        qn = math.sqrt(sum(x * x for x in v))
        scored = []
        for id_, rec in space.items():
            if not f(rec["metadata"] or {}):
                continue
            r = rec["vector"]
            cos = sum(a * b for a, b in zip(v, r)) / (qn * math.sqrt(sum(x * x for x in r)))
            scored.append(((1 + cos) / 2, id_))
        scored.sort(key=lambda t: (-t[0], t[1]))
        flags = (q.get("includeVectors"), q.get("includeMetadata"), q.get("includeData"))
        return [self._out(i, space[i], *flags, score=s) for s, i in scored[:k]]


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# ------------------------------------------------------------------------------------------------
# Flow control + delivery

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_value(value: str) -> dict:
    out: dict = {}
    if not value.strip():
        raise HttpError(400, "empty Upstash-Flow-Control-Value")
    for part in value.split(","):
        if "=" not in part:
            raise HttpError(400, f"flow control part {part.strip()!r} has no '='")
        name, val = (x.strip() for x in part.split("=", 1))
        name = name.lower()
        if name in out or name not in ("parallelism", "rate", "period"):
            raise HttpError(400, f"bad flow control part {part.strip()!r}")
        if name == "period":
            m = re.fullmatch(r"(\d+)([smhd]?)", val)
            if not m:
                raise HttpError(400, f"bad period {val!r}")
            secs = int(m.group(1)) * UNITS[m.group(2) or "s"]
            if not 1 <= secs <= 7 * 86400:
                raise HttpError(400, f"period {val!r} out of range 1s..7d")
            out[name] = secs
        else:
            if not re.fullmatch(r"\d+", val) or int(val) < 1:
                raise HttpError(400, f"{name} must be an integer >= 1, got {val!r}")
            out[name] = int(val)
    if "period" in out and "rate" not in out:
        raise HttpError(400, "period without rate")
    return out


class Key:
    def __init__(self, name: str) -> None:
        self.name = name
        self.par_max = None
        self.rate_max = None
        self.period = 1
        self.par_count = 0
        self.rate_count = 0
        self.window_start = None
        self.paused = False
        self.pin_p = False
        self.pin_r = False
        self.waiting: collections.deque = collections.deque()

    def window_open(self, now: float) -> bool:
        return self.window_start is not None and now < self.window_start + self.period

    def info(self, now: float) -> dict:
        o = {"flowControlKey": self.name, "waitListSize": len(self.waiting), "parallelismCount": self.par_count,
             "rateCount": self.rate_count if self.window_open(now) else 0, "ratePeriod": self.period,
             "ratePeriodStart": int(self.window_start or 0), "isPaused": self.paused,
             "isPinnedParallelism": self.pin_p, "isPinnedRate": self.pin_r}
        if self.par_max is not None:
            o["parallelismMax"] = self.par_max
        if self.rate_max is not None:
            o["rateMax"] = self.rate_max
        return o


class Queue:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.keys: dict[str, Key] = {}
        self.free: collections.deque = collections.deque()
        self.active = 0
        threading.Thread(target=self._loop, daemon=True).start()

    def key(self, name: str) -> Key:
        return self.keys.setdefault(name, Key(name))

    def publish(self, dest: str, body: bytes, ctype, fkey, fval) -> str:
        mid = "msg_" + uuid.uuid4().hex
        msg = (mid, dest, body, ctype)
        with self.cond:
            if fkey is None and fval is None:
                self.free.append(msg)
            else:
                if not fkey or fval is None:
                    raise HttpError(400, "flow control key and value go together")
                limits = parse_value(fval)
                k = self.key(fkey)
                if not k.pin_p:
                    k.par_max = limits.get("parallelism")
                if not k.pin_r:
                    k.rate_max = limits.get("rate")
                    k.period = limits.get("period", 1)
                k.waiting.append(msg)
            self.cond.notify_all()
        return mid

    def _loop(self) -> None:
        while True:
            with self.cond:
                now = time.time()
                while self.free:
                    self._start(None, self.free.popleft())
                for k in list(self.keys.values()):
                    while k.waiting and not k.paused:
                        if k.par_max is not None and k.par_count >= k.par_max:
                            break
                        if k.rate_max is not None:
                            if not k.window_open(now):
                                k.window_start, k.rate_count = now, 0
                            if k.rate_count >= k.rate_max:
                                break
                            k.rate_count += 1
                        k.par_count += 1
                        self._start(k, k.waiting.popleft())
                self.cond.wait(timeout=0.005)

    def _start(self, k, msg) -> None:
        self.active += 1
        threading.Thread(target=self._deliver, args=(k, msg), daemon=True).start()

    def _deliver(self, k, msg) -> None:
        _, dest, body, ctype = msg
        req = urllib.request.Request(dest, data=body, method="POST")
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            urllib.request.urlopen(req, timeout=30).read()
        except Exception:  # any status or failure completes the call in this model
            pass
        with self.cond:
            self.active -= 1
            if k is not None:
                k.par_count -= 1
            self.cond.notify_all()


# ------------------------------------------------------------------------------------------------
# HTTP


def make_handler(token: str, index: VectorIndex, queue: Queue):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, obj) -> None:
            b = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def _handle(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            path, _, query = self.path.partition("?")
            try:
                if self.headers.get("Authorization") != f"Bearer {token}":
                    raise HttpError(401, "Unauthorized")
                if path.startswith("/v2/"):
                    self._queue(path, query, raw)
                    return
                if self.command != "POST" and self.command != "GET":
                    raise HttpError(405, "method not allowed")
                segs = path.lstrip("/").split("/", 1)
                op = segs[0]
                ns = urllib.parse.unquote(segs[1]) if len(segs) > 1 else ""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    raise HttpError(400, "malformed JSON body")
                self._send(200, {"result": index.handle(op, ns, query, body)})
            except HttpError as e:
                self._send(e.status, {"error": str(e), "status": e.status})

        def _queue(self, path: str, query: str, raw: bytes) -> None:
            now = time.time()
            if path.startswith("/v2/publish/"):
                dest = path[len("/v2/publish/"):] + (f"?{query}" if query else "")
                h = self.headers
                fkey = h.get("Upstash-Flow-Control-Key") or h.get("Service-Flow-Control-Key")
                fval = h.get("Upstash-Flow-Control-Value")
                if fval is None:
                    fval = h.get("Service-Flow-Control-Value")
                mid = queue.publish(dest, raw, h.get("Content-Type"), fkey, fval)
                self._send(201, {"messageId": mid})
                return
            if path == "/v2/globalParallelism":
                with queue.cond:
                    self._send(200, {"parallelismCount": queue.active})
                return
            if path.rstrip("/") == "/v2/flowControl":
                with queue.cond:
                    self._send(200, [k.info(now) for k in queue.keys.values()])
                return
            m = re.fullmatch(r"/v2/flowControl/([^/]+)(?:/(pause|resume|pin|unpin|resetRate))?", path)
            if not m:
                raise HttpError(404, "unknown route")
            name, action = urllib.parse.unquote(m.group(1)), m.group(2)
            params = dict(urllib.parse.parse_qsl(query))
            with queue.cond:
                if action is None:
                    if name not in queue.keys:
                        raise HttpError(404, f"flow control key {name} not found")
                    self._send(200, queue.keys[name].info(now))
                    return
                if action == "resetRate" and name not in queue.keys:
                    raise HttpError(404, f"flow control key {name} not found")
                k = queue.key(name)
                if action == "pause":
                    k.paused = True
                elif action == "resume":
                    k.paused = False
                elif action == "pin":
                    if not params:
                        raise HttpError(400, "pin needs parallelism, rate or period")
                    if "parallelism" in params:
                        k.par_max, k.pin_p = int(params["parallelism"]), True
                    if "rate" in params:
                        k.rate_max, k.pin_r = int(params["rate"]), True
                        k.period = int(params.get("period", 1))
                        k.window_start, k.rate_count = None, 0
                elif action == "unpin":
                    if params.get("parallelism") == "true":
                        k.pin_p = False
                    if params.get("rate") == "true":
                        k.pin_r = False
                elif action == "resetRate":
                    k.window_start, k.rate_count = None, 0
                queue.cond.notify_all()
            self._send(200, {})

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        def log_message(self, *args) -> None:
            pass

    return Handler


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8787)
    p.add_argument("--token", default="e2e-test-token")
    p.add_argument("--dimension", type=int, default=8)
    p.add_argument("--metric", choices=["COSINE"], default="COSINE")
    p.add_argument("--snapshot", help="accepted for flag compatibility with run_e2e.sh; unused")
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(a.token, VectorIndex(a.dimension), Queue()))
    server.daemon_threads = True
    print(f"fake flowvec on http://127.0.0.1:{a.port} token={a.token}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
