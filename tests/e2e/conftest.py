"""Shared fixtures for the end-to-end tests against `flowvec-server` (`server/`).

The server is started by `run_e2e.sh` (or by hand); these tests only talk to it. Configuration:

- `FLOWVEC_URL`   base URL of the server (default `http://127.0.0.1:8787`), no trailing slash needed;
- `FLOWVEC_TOKEN` bearer token for both the vector and the queue API (default `e2e-test-token`);
- `FLOWVEC_E2E_JITTER_MS` timing tolerance of the queue tests (default 150 ms, see
  `test_queue_sdk.py`).

Nothing is skipped: if the server does not answer, every test errors with a message saying so.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from qstash import QStash
from upstash_vector import Index

DEFAULT_URL = "http://127.0.0.1:8787"
DEFAULT_TOKEN = "e2e-test-token"


def server_url() -> str:
    return os.environ.get("FLOWVEC_URL", DEFAULT_URL).rstrip("/")


def server_token() -> str:
    return os.environ.get("FLOWVEC_TOKEN", DEFAULT_TOKEN)


def _assert_reachable(url: str) -> None:
    parsed = urllib.parse.urlparse(url)
    host = parsed.hostname or "127.0.0.1"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=3):
            pass
    except OSError as exc:
        pytest.fail(
            f"flowvec server not reachable at {url} ({exc}); start it with "
            f"`bash tests/e2e/run_e2e.sh` or set FLOWVEC_URL",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def base_url() -> str:
    url = server_url()
    _assert_reachable(url)
    return url


@pytest.fixture(scope="session")
def token() -> str:
    return server_token()


@pytest.fixture(scope="session")
def index(base_url: str, token: str) -> Index:
    # retries=0: a refused connection must fail at once, not after 3 silent retries. Telemetry
    # headers stay on (the default), as real users send them and the server must ignore them.
    return Index(url=base_url, token=token, retries=0)


@pytest.fixture(scope="session")
def qstash(base_url: str, token: str) -> QStash:
    return QStash(token, base_url=base_url, retry=False)


# ---------------------------------------------------------------------------------------------
# A local destination for published messages.


@dataclass
class Arrival:
    """One delivery as the destination saw it (times from `time.monotonic()`)."""

    group: str
    seq: str
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    start: float
    end: float = 0.0


@dataclass
class Group:
    """Deliveries to one `/d/{group}/...` prefix, with their concurrency."""

    arrivals: list[Arrival] = field(default_factory=list)
    active: int = 0
    max_active: int = 0


class Destination:
    """An HTTP server on 127.0.0.1 (port 0) that records every call it gets.

    URL shape: `{url}/d/{group}/{hold_ms}/{seq}`. The handler records the arrival, holds the call
    `hold_ms` milliseconds, then answers 200. Concurrency is tracked per group: the active count
    is decremented *before* the response is written, so the server under test cannot have seen
    the completion (and dispatched the next message) while the count is still high.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._groups: dict[str, Group] = {}
        dest = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                start = time.monotonic()
                body = self._read_body()
                parsed = urllib.parse.urlsplit(self.path)
                parts = parsed.path.strip("/").split("/")
                if len(parts) != 4 or parts[0] != "d":
                    self._answer(404)
                    return
                _, group, hold_ms, seq = parts
                arrival = Arrival(
                    group=group,
                    seq=seq,
                    method=self.command,
                    path=parsed.path,
                    query=parsed.query,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    start=start,
                )
                dest._begin(arrival)
                time.sleep(int(hold_ms) / 1000.0)
                dest._end(arrival)
                self._answer(200)

            def _read_body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _answer(self, status: int) -> None:
                payload = b"ok"
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_PUT = do_GET = do_PATCH = do_DELETE = _handle

            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _begin(self, arrival: Arrival) -> None:
        with self._cond:
            g = self._groups.setdefault(arrival.group, Group())
            g.arrivals.append(arrival)
            g.active += 1
            g.max_active = max(g.max_active, g.active)
            self._cond.notify_all()

    def _end(self, arrival: Arrival) -> None:
        with self._cond:
            g = self._groups[arrival.group]
            g.active -= 1
            arrival.end = time.monotonic()
            self._cond.notify_all()

    def target(self, group: str, seq: object, hold_ms: int = 0) -> str:
        return f"{self.url}/d/{group}/{hold_ms}/{seq}"

    def snapshot(self, group: str) -> Group:
        with self._lock:
            g = self._groups.get(group, Group())
            return Group(arrivals=list(g.arrivals), active=g.active, max_active=g.max_active)

    def count(self, group: str) -> int:
        with self._lock:
            g = self._groups.get(group)
            return len(g.arrivals) if g else 0

    def wait_for(self, group: str, n: int, timeout: float) -> Group:
        """Wait until `n` calls of `group` have arrived *and* finished; fail loudly otherwise."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                g = self._groups.get(group, Group())
                done = sum(1 for a in g.arrivals if a.end)
                if len(g.arrivals) >= n and done >= n:
                    return Group(arrivals=list(g.arrivals), active=g.active, max_active=g.max_active)
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(
                        f"destination group {group!r}: {len(g.arrivals)} of {n} calls arrived "
                        f"({done} finished) within {timeout} s"
                    )
                self._cond.wait(timeout=min(left, 0.1))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="session")
def destination():
    dest = Destination()
    yield dest
    dest.close()


@pytest.fixture(scope="session")
def jitter() -> float:
    """Tolerated delay (s) between the server's dispatch and the destination's arrival stamp."""
    return float(os.environ.get("FLOWVEC_E2E_JITTER_MS", "150")) / 1000.0
