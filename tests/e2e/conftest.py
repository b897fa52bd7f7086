"""Shared fixtures for the end-to-end tests against `flowvec-server` (`server/`).

The server is started by `run_e2e.sh` (or by hand); these tests only talk to it. Configuration:

- `FLOWVEC_URL`   base URL of the server (default `http://127.0.0.1:8787`), no trailing slash needed;
- `FLOWVEC_TOKEN` bearer token for both the vector and the queue API (default `e2e-test-token`);
- `FLOWVEC_E2E_JITTER_MS` timing tolerance of the queue tests (default 150 ms, see
  `test_queue_sdk.py`).

Nothing is skipped: if the server does not answer, every test errors with a message saying so.

Also shared by the test modules (import them with `from conftest import ...`): `wait_until`,
`fixed_windows` (rate windows from arrival times), `raw_request` (plain urllib, for routes and
checks the SDK does not cover, e.g. no `Authorization` header at all), `sdk_error` (status and
JSON body of a `QStashError`) and `Reply` (a scripted answer of the destination).
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

import pytest
from qstash import QStash
from qstash.errors import QStashError, SignatureError
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _spawn_index(token: str, data, name: str, args: list[str]):
    """A further server (`args` after the port, token and data directory), started from the
    release binary `run_e2e.sh` built (`FLOWVEC_SERVER_BIN`, default
    `target/release/flowvec-server`) on a free port with a fresh data directory; yields an
    `Index` for it and stops it (Ctrl-C) afterwards."""
    import subprocess

    binary = os.environ.get("FLOWVEC_SERVER_BIN", os.path.join(_repo_root(), "target/release/flowvec-server"))
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no server binary at {binary}: run `cargo build --release -p flowvec-server`", pytrace=False)
    port = _free_port()
    log = open(data / "server.log", "wb")
    env = {k: v for k, v in os.environ.items() if k != "FLOWVEC_MODEL_DIR"}
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--token", token, "--data-dir", str(data / "data"), *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"{name} server did not start: {(data / 'server.log').read_text()}", pytrace=False)
            time.sleep(0.1)
    try:
        yield Index(url=f"http://127.0.0.1:{port}", token=token, retries=0)
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def sparse_index(token: str, tmp_path_factory: pytest.TempPathFactory):
    """A second server: a SPARSE index (BM25 embeds text)."""
    yield from _spawn_index(token, tmp_path_factory.mktemp("sparse-server"), "sparse", ["--kind", "SPARSE"])


@pytest.fixture(scope="session")
def minilm_index(token: str, tmp_path_factory: pytest.TempPathFactory):
    """A third server: a DENSE 384-d COSINE index whose text `data` all-MiniLM-L6-v2 embeds
    (`--model-dir`, the directory `scripts/fetch-minilm` fills and prints)."""
    import subprocess

    fetched = subprocess.run(
        ["bash", os.path.join(_repo_root(), "scripts/fetch-minilm")], capture_output=True, text=True
    )
    if fetched.returncode != 0:
        pytest.fail(f"scripts/fetch-minilm failed: {fetched.stderr}", pytrace=False)
    model_dir = fetched.stdout.strip()
    yield from _spawn_index(
        token,
        tmp_path_factory.mktemp("minilm-server"),
        "minilm",
        ["--kind", "DENSE", "--dimension", "384", "--metric", "COSINE", "--model-dir", model_dir],
    )


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
    #: 0-based index of this call among the calls to the same `group`/`seq` URL.
    attempt: int = 0
    #: Status the destination answered (0 while the call is held).
    status: int = 0
    #: Why the group's `Receiver` refused the signature (the call was answered 401), else None.
    verify_error: Optional[str] = None


@dataclass
class Reply:
    """A scripted answer of the destination (see `Destination.script`)."""

    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)


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

    Optional behaviour, set by the tests:
    - `script(group, seq, [Reply, ...])`: the n-th call to that URL gets the n-th `Reply`, calls
      after the list get `200 ok`;
    - `gate(group, seq)`: calls to that URL wait (after being recorded as arrived and active)
      until the returned `threading.Event` is set (at most 30 s);
    - `verify(group, receiver)`: every call of the group is checked with
      `receiver.verify(signature=Upstash-Signature, body=..., url=<the URL called>)` (a
      `qstash.Receiver`); a refusal is recorded in `Arrival.verify_error` and answered 401.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._groups: dict[str, Group] = {}
        self._scripts: dict[tuple[str, str], list[Reply]] = {}
        self._gates: dict[tuple[str, str], threading.Event] = {}
        self._verifiers: dict[str, Any] = {}
        dest = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                start = time.monotonic()
                body = self._read_body()
                parsed = urllib.parse.urlsplit(self.path)
                parts = parsed.path.strip("/").split("/")
                if len(parts) != 4 or parts[0] != "d":
                    self._answer(Reply(404, b"no such path"))
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
                refusal = dest._check_signature(arrival)
                if refusal is not None:
                    dest._end(arrival, 401)
                    self._answer(Reply(401, refusal.encode()))
                    return
                gate = dest._gates.get((group, seq))
                if gate is not None:
                    gate.wait(timeout=30)
                time.sleep(int(hold_ms) / 1000.0)
                reply = dest._reply_for(arrival)
                dest._end(arrival, reply.status)
                self._answer(reply)

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

            def _answer(self, reply: Reply) -> None:
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "text/plain", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    # The caller gave up (its per-attempt timeout): nobody reads the answer.
                    self.close_connection = True

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
            arrival.attempt = sum(1 for a in g.arrivals if a.seq == arrival.seq)
            g.arrivals.append(arrival)
            g.active += 1
            g.max_active = max(g.max_active, g.active)
            self._cond.notify_all()

    def _end(self, arrival: Arrival, status: int = 200) -> None:
        with self._cond:
            g = self._groups[arrival.group]
            g.active -= 1
            arrival.status = status
            arrival.end = time.monotonic()
            self._cond.notify_all()

    def _check_signature(self, arrival: Arrival) -> Optional[str]:
        receiver = self._verifiers.get(arrival.group)
        if receiver is None:
            return None
        url = self.url + arrival.path + (f"?{arrival.query}" if arrival.query else "")
        try:
            receiver.verify(
                signature=arrival.headers.get("upstash-signature", ""),
                body=arrival.body.decode(),
                url=url,
            )
        except (SignatureError, UnicodeDecodeError) as exc:
            with self._cond:
                arrival.verify_error = f"{type(exc).__name__}: {exc}"
            return arrival.verify_error
        return None

    def _reply_for(self, arrival: Arrival) -> Reply:
        replies = self._scripts.get((arrival.group, arrival.seq), [])
        return replies[arrival.attempt] if arrival.attempt < len(replies) else Reply()

    def target(self, group: str, seq: object, hold_ms: int = 0) -> str:
        return f"{self.url}/d/{group}/{hold_ms}/{seq}"

    def script(self, group: str, seq: object, replies: list[Reply]) -> None:
        """The first calls to `group`/`seq` get `replies` in order (then `200 ok`)."""
        with self._lock:
            self._scripts[(group, str(seq))] = list(replies)

    def gate(self, group: str, seq: object) -> threading.Event:
        """Calls to `group`/`seq` are held until the returned event is set."""
        event = threading.Event()
        with self._lock:
            self._gates[(group, str(seq))] = event
        return event

    def verify(self, group: str, receiver: Any) -> None:
        """Check every call of `group` with `receiver` (a `qstash.Receiver`), see the class doc."""
        with self._lock:
            self._verifiers[group] = receiver

    def calls(self, group: str, seq: object) -> list[Arrival]:
        """The calls to `group`/`seq` so far, in arrival order."""
        with self._lock:
            g = self._groups.get(group)
            return [a for a in g.arrivals if a.seq == str(seq)] if g else []

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


# ---------------------------------------------------------------------------------------------
# Helpers shared by the test modules.


def wait_until(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `pred` until it returns something truthy (returned); fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def fixed_windows(starts: list[float], period: float, jitter: float) -> list[list[float]]:
    """Group arrival times into the server's fixed rate windows (see `test_queue_sdk.py`).

    Every window gets the earliest start consistent with an arrival latency of at most
    `jitter`, so the reconstructed windows end no later than the server's."""
    starts = sorted(starts)
    windows: list[list[float]] = [[]]
    begin = starts[0] - jitter
    for a in starts:
        if a >= begin + period:
            windows.append([])
            begin = max(a - jitter, begin + period)
        windows[-1].append(a)
    return windows


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(
    method: str,
    path: str,
    *,
    token: Optional[str] = None,
    headers: Optional[dict[str, str]] = None,
    body: Optional[bytes] = None,
    timeout: float = 10,
) -> RawResponse:
    """A plain urllib call to the server (no SDK); `token=None` sends no `Authorization`."""
    request = urllib.request.Request(server_url() + path, data=body, method=method)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return RawResponse(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as err:
        return RawResponse(err.code, dict(err.headers.items()), err.read())


def sdk_error(exc: QStashError) -> tuple[int, Any]:
    """Status and JSON body of the SDK's `Request failed with status: N, body: ...` error."""
    match = re.match(r"Request failed with status: (\d+), body: (.*)\Z", str(exc), re.S)
    assert match, f"not an HTTP status error of the SDK: {exc!r}"
    try:
        body = json.loads(match.group(2))
    except ValueError:
        body = match.group(2)
    return int(match.group(1)), body
