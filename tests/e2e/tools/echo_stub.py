"""Throwaway echo stub: prints every request the SDKs send (method, path, headers, body) as one
JSON line and answers with a minimal well-formed response, so `drive_sdks.py` can show the exact
wire format. Used to confirm WIRE.md; not part of the test run.

    python tests/e2e/tools/echo_stub.py 18080 > requests.jsonl &
    python tests/e2e/tools/drive_sdks.py http://127.0.0.1:18080
"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def _h(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host","accept-encoding","connection","user-agent","accept")}
        print(json.dumps({"method": self.command, "path": self.path, "headers": hdrs, "body": body.decode()}), flush=True)
        p = self.path
        if p.startswith("/v2/publish"): out = {"messageId": "msg_1"}
        elif p.startswith("/v2/flowControl/") and self.command == "GET": out = {"flowControlKey": "k"}
        elif p.startswith("/v2/flowControl"): out = {}
        elif p.startswith("/v2/globalParallelism"): out = {"parallelismMax": 0, "parallelismCount": 0}
        elif p.startswith("/info"): out = {"result": {"vectorCount":0,"pendingVectorCount":0,"indexSize":0,"dimension":8,"similarityFunction":"COSINE","namespaces":{"":{"vectorCount":0,"pendingVectorCount":0}}}}
        elif p.startswith("/range"): out = {"result": {"nextCursor": "", "vectors": []}}
        elif p.startswith("/delete-namespace") or p.startswith("/reset") or p.startswith("/upsert"): out = {"result": "Success"}
        elif p.startswith("/delete"): out = {"result": {"deleted": 0}}
        elif p.startswith("/update"): out = {"result": {"updated": 1}}
        elif p.startswith("/list-namespaces"): out = {"result": [""]}
        elif p.startswith("/query") and body.startswith(b"["): out = {"result": [[], []]}
        else: out = {"result": []}
        b = json.dumps(out).encode()
        self.send_response(200); self.send_header("Content-Type","application/json"); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    do_GET = do_POST = do_PUT = do_DELETE = _h
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
