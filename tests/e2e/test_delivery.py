"""End-to-end: delivery features of the queue API through the PyPI `qstash` 3.4.0 SDK: retries
with exponential backoff, per-attempt timeouts, delays and not-before times, success and failure
callbacks, the messages API (get, cancel one / many / by key / all), the dead letter queue (list,
get, delete, delete many, retry) and the errors of those routes.

The destination is `conftest.Destination`, scripted per URL (`script`: the n-th call gets the n-th
`Reply`), held per URL (`gate`) and checking every call of a group with the SDK's own `Receiver`
(`verify`: a refused signature is answered 401 *and* recorded, and the tests assert none was).
The SDK is used wherever it has a method; plain HTTP (`conftest.raw_request`, urllib) only for
what it lacks: `POST /v2/dlq/retry/{dlqId}`, `DELETE /v2/messages?flowControlKey=k`, the raw
JSON of `GET /v2/messages/{id}` (`state`, `retried`, `nextDeliveryAt`) and calls without any
`Authorization` header.

Timing (all measured at the destination with `time.monotonic()`, converted to Unix time where a
server time is compared):
- Backoff: `run_e2e.sh` starts the server with `--retry-backoff-ms 50` (override with
  `FLOWVEC_E2E_BACKOFF_MS` when pointing at another server). The wait after the failed attempt
  carrying `Upstash-Retried: n` is `50 ms * 2^n` times a random factor in [0.5, 1]; it is
  measured from the moment the destination answered the failed attempt to the next arrival, so
  it can only look *longer* than the server's (lower bound: `BACKOFF_EPS` = 2 ms for the
  server's whole-millisecond clock; upper bound: `jitter`, FLOWVEC_E2E_JITTER_MS, default 150 ms).
- Delays: a delayed message must arrive no earlier than its time and at most 50 ms after it.
  The check allows `DELAY_SLACK` = 50 ms (the contract) + `CLOCK_GRANULARITY` = 10 ms: the
  server keeps times in whole milliseconds (up to 1 ms), the monotonic-to-Unix conversion of the
  arrival stamp (microseconds) and the destination's thread wake-up between the server's send
  and the stamp (a few ms on a loaded 2-core machine). The lower bound has 1 ms for the
  millisecond rounding only.

Groups and keys are unique per run, so a long-lived server gives the same results.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import socket
import time
import urllib.parse

import pytest
from qstash import QStash, Receiver
from qstash.errors import QStashError

from conftest import Reply, fixed_windows, raw_request, sdk_error, wait_until

RUN = f"dlv-{int(time.time())}-{os.getpid()}"

#: Base of the server's retry backoff (`--retry-backoff-ms` in run_e2e.sh).
BACKOFF = float(os.environ.get("FLOWVEC_E2E_BACKOFF_MS", "50")) / 1000.0
#: The server's clock has whole milliseconds: a deadline may look up to ~1 ms early.
BACKOFF_EPS = 0.002
#: A delayed message arrives at most 50 ms after its time (the contract) ...
DELAY_SLACK = 0.050
#: ... plus the clock granularity and the stamp's latency (see the module doc).
CLOCK_GRANULARITY = 0.010
#: Default retries of a message published without `retries`.
DEFAULT_RETRIES = 3


def grp(name: str) -> str:
    return f"{RUN}-{name}"


def key(name: str) -> str:
    return f"e2e-{RUN}-{name}"


def wall(mono: float) -> float:
    """A `time.monotonic()` stamp as Unix seconds."""
    return mono + (time.time() - time.monotonic())


def now_ms() -> int:
    return int(time.time() * 1000)


def hget(headers: dict | None, name: str):
    """A header from a `{name: value-or-[values]}` map, whatever the case of the names."""
    for k, v in (headers or {}).items():
        if k.lower() == name.lower():
            return v
    return None


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def publish(q: QStash, **kwargs) -> str:
    res = q.message.publish(**kwargs)
    assert isinstance(res.message_id, str) and res.message_id, res
    return res.message_id


def raw_message(q: QStash, message_id: str) -> dict:
    """The raw JSON of `GET /v2/messages/{id}` (the SDK's `Message` drops `state` & co)."""
    return q.http.request(path=f"/v2/messages/{message_id}", method="GET")


def expect_status(status: int, call, *args, **kwargs):
    """`call` must raise the SDK's error for HTTP `status`; returns the error's JSON body."""
    with pytest.raises(QStashError) as info:
        call(*args, **kwargs)
    got, body = sdk_error(info.value)
    assert got == status, f"{getattr(call, '__qualname__', call)}{args}: {got} {body!r}, want {status}"
    return body


def is_gone(q: QStash, message_id: str) -> bool:
    """`message.get` answers 404 (delivered, dead-lettered, cancelled or never known)."""
    try:
        q.message.get(message_id)
    except QStashError as exc:
        status, _ = sdk_error(exc)
        assert status == 404, f"message.get({message_id}): {exc}"
        return True
    return False


def dlq_entries(q: QStash, message_id: str) -> list:
    return q.dlq.list(filter={"message_id": message_id}).messages


def wait_dead(q: QStash, message_ids: list[str], timeout: float = 15) -> dict:
    """Wait until every id has a DLQ entry; returns id -> its one entry."""
    found: dict = {}

    def all_dead():
        for mid in message_ids:
            if mid not in found:
                entries = dlq_entries(q, mid)
                if entries:
                    assert len(entries) == 1, f"{mid} is in the DLQ {len(entries)} times"
                    found[mid] = entries[0]
        return len(found) == len(message_ids)

    wait_until(all_dead, timeout, f"DLQ entries of {sorted(set(message_ids) - set(found))}")
    return found


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def receiver(qstash: QStash) -> Receiver:
    keys = qstash.signing_key.get()
    return Receiver(current_signing_key=keys.current, next_signing_key=keys.next)


def check_backoff(calls, jitter: float) -> None:
    """Gaps between consecutive attempts follow `BACKOFF * 2^n * [0.5, 1]` (module doc)."""
    for n in range(len(calls) - 1):
        gap = calls[n + 1].start - calls[n].end
        full = BACKOFF * 2**n
        assert gap >= full / 2 - BACKOFF_EPS, (
            f"retry {n + 1} came {gap * 1000:.1f} ms after the failed attempt; the backoff is at "
            f"least {full / 2 * 1000:.0f} ms"
        )
        assert gap <= full + jitter, (
            f"retry {n + 1} came {gap * 1000:.1f} ms after the failed attempt; the backoff is at "
            f"most {full * 1000:.0f} ms (+{jitter * 1000:.0f} ms tolerance)"
        )


def assert_no_bad_signature(destination, group: str) -> None:
    bad = [(a.seq, a.attempt, a.verify_error) for a in destination.snapshot(group).arrivals if a.verify_error]
    assert not bad, f"deliveries refused by the SDK's Receiver: {bad}"


# ---------------------------------------------------------------------------------------------
# 1. Retries: signed, verified, exactly retries+1 attempts


def test_signed_deliveries_retry_until_success_or_dead_letter(qstash, destination, receiver, jitter):
    group = grp("signed")
    destination.verify(group, receiver)
    # (retries or None for the default, failures scripted before a 200, failure status)
    specs = [
        (0, 0, 500),
        (0, 1, 500),
        (1, 1, 503),
        (1, 2, 500),
        (2, 2, 404),
        (2, 9, 429),
        (3, 3, 500),
        (3, 9, 400),
        (None, 1, 500),
        (None, 9, 502),
    ]
    sent = {}
    for seq, (retries, failures, status) in enumerate(specs):
        destination.script(group, seq, [Reply(status, f"fail {seq}.{n}".encode()) for n in range(failures)])
        body = f"signed ✓ {seq} {RUN}"
        kwargs = dict(
            url=destination.target(group, seq),
            body=body,
            content_type="text/plain; charset=utf-8",
            headers={"X-Seq": str(seq), "X-Run": RUN},
        )
        if retries is not None:
            kwargs["retries"] = retries
        sent[seq] = (publish(qstash, **kwargs), body)

    def effective(seq):
        retries, failures, _ = specs[seq]
        retries = DEFAULT_RETRIES if retries is None else retries
        return retries, failures <= retries, min(failures, retries) + 1

    dead_ids = [sent[s][0] for s in sent if not effective(s)[1]]
    delivered = [s for s in sent if effective(s)[1]]
    wait_until(
        lambda: all(any(200 <= c.status < 300 and c.end for c in destination.calls(group, s)) for s in delivered),
        15,
        "the deliveries that eventually succeed",
    )
    dead = wait_dead(qstash, dead_ids)
    time.sleep(0.4)  # longer than any further backoff here: no attempt may follow the last one

    assert_no_bad_signature(destination, group)
    for seq, (message_id, body) in sent.items():
        retries, ok, attempts = effective(seq)
        calls = destination.calls(group, seq)
        what = f"message {seq} (retries={retries}, failures={specs[seq][1]})"
        assert len(calls) == attempts, f"{what}: {len(calls)} attempts, want {attempts}"
        assert [c.headers.get("upstash-retried") for c in calls] == [str(n) for n in range(attempts)], what
        for c in calls:
            assert c.headers.get("upstash-message-id") == message_id, what
            assert c.method == "POST", what
            assert c.body == body.encode(), what
            assert c.headers.get("x-seq") == str(seq) and c.headers.get("x-run") == RUN, what
            assert c.headers.get("content-type") == "text/plain; charset=utf-8", what
        check_backoff(calls, jitter)
        assert is_gone(qstash, message_id), f"{what}: message.get must be 404 once it is over"
        if ok:
            assert message_id not in dead and not dlq_entries(qstash, message_id), f"{what} in the DLQ"
            continue
        entry = dead[message_id]
        assert entry.message_id == message_id and entry.dlq_id
        assert entry.response_status == specs[seq][2], what
        assert entry.response_body == f"fail {seq}.{attempts - 1}", what
        assert entry.max_retries == retries, what
        assert entry.url == destination.target(group, seq), what
        assert entry.body == body and entry.method == "POST", what
        assert hget(entry.headers, "X-Seq") == [str(seq)], entry.headers

    assert qstash.dlq.delete_many([e.dlq_id for e in dead.values()]) == len(dead)


def test_timeout_and_unreachable_destination_are_failed_attempts(qstash, destination, receiver, jitter):
    group, cb = grp("timeout"), grp("timeout-cb")
    destination.verify(cb, receiver)
    slow = publish(
        qstash, url=destination.target(group, "slow", 1000), body="slow", timeout="300ms", retries=1,
        failure_callback=destination.target(cb, "slow"),
    )
    quick = publish(qstash, url=destination.target(group, "quick", 200), body="quick", timeout="2s", retries=0)
    gone_url = f"http://127.0.0.1:{closed_port()}/nowhere"
    gone = publish(qstash, url=gone_url, body="nobody", retries=1, failure_callback=destination.target(cb, "gone"))

    dead = wait_dead(qstash, [slow, gone])
    destination.wait_for(cb, 2, timeout=10)
    calls = destination.calls(group, "slow")
    assert len(calls) == 2, f"a timed-out attempt is retried once (retries=1): {len(calls)} calls"
    # Start to start: timeout + backoff, give or take the difference of the two calls' latency
    # from the server's send to the destination's stamp (a new connection each time: 10 ms).
    gap = calls[1].start - calls[0].start
    assert gap >= 0.300 + BACKOFF / 2 - 0.010, f"second attempt {gap:.3f} s after the first"
    assert gap < 0.300 + BACKOFF + jitter, (
        f"second attempt {gap:.3f} s after the first: the 300 ms timeout did not cut the 1 s call"
    )
    assert [c.headers.get("upstash-retried") for c in calls] == ["0", "1"]
    assert dead[slow].response_status == 0 and dead[slow].max_retries == 1
    assert dead[gone].response_status == 0 and dead[gone].url == gone_url

    destination.wait_for(group, 3, timeout=5)  # the quick one finished well within its timeout
    q_calls = destination.calls(group, "quick")
    assert len(q_calls) == 1 and q_calls[0].status == 200
    assert not dlq_entries(qstash, quick)

    for seq, mid, url, body in (("slow", slow, destination.target(group, "slow", 1000), "slow"),
                                ("gone", gone, gone_url, "nobody")):
        [call] = destination.calls(cb, seq)
        doc = json.loads(call.body)
        assert doc["status"] == 0, f"no response: status 0, got {doc['status']}"
        assert doc["retried"] == 1 and doc["maxRetries"] == 1
        assert doc["dlqId"] == dead[mid].dlq_id and doc["sourceMessageId"] == mid
        assert doc["url"] == url and base64.b64decode(doc["sourceBody"]) == body.encode()
    assert_no_bad_signature(destination, cb)
    qstash.dlq.delete_many([dead[slow].dlq_id, dead[gone].dlq_id])


# ---------------------------------------------------------------------------------------------
# 2. Flow-control limits hold with retries


def test_parallelism_holds_with_retries(qstash, destination):
    k, group = key("par"), grp("par")
    failures = {0: 1, 1: 2, 2: 0, 3: 1, 4: 0, 5: 3}
    ids = {}
    for seq, n in failures.items():
        destination.script(group, seq, [Reply(500, b"again")] * n)
        ids[seq] = publish(
            qstash, url=destination.target(group, seq, 100), body=f"par {seq}", retries=3,
            flow_control={"key": k, "parallelism": 2},
        )
    total = sum(n + 1 for n in failures.values())
    g = destination.wait_for(group, total, timeout=15)
    time.sleep(0.3)
    g = destination.snapshot(group)
    assert len(g.arrivals) == total, f"{len(g.arrivals)} calls, want {total}"
    assert g.max_active <= 2, f"{g.max_active} calls of the key at once with parallelism 2 (retries included)"
    assert g.max_active == 2, "parallelism 2 was never used"
    for seq, n in failures.items():
        calls = destination.calls(group, seq)
        assert [c.status for c in calls] == [500] * n + [200], seq
        assert {c.headers.get("upstash-message-id") for c in calls} == {ids[seq]}
        assert [c.headers.get("upstash-retried") for c in calls] == [str(i) for i in range(n + 1)]


def test_backoff_does_not_block_the_keys_other_messages(qstash, destination):
    k, group = key("noblock"), grp("noblock")
    fc = {"key": k, "parallelism": 1}
    destination.script(group, "a", [Reply(500, b"down")] * 5)
    a = publish(qstash, url=destination.target(group, "a"), body="a", retries=4, flow_control=fc)
    for i in range(3):
        publish(qstash, url=destination.target(group, f"b{i}"), body=f"b{i}", retries=0, flow_control=fc)
    dead = wait_dead(qstash, [a])
    a_calls = destination.calls(group, "a")
    assert len(a_calls) == 5
    b_calls = [c for i in range(3) for c in destination.calls(group, f"b{i}")]
    assert len(b_calls) == 3 and all(c.status == 200 for c in b_calls)
    # A's four backoffs take at least 25+50+100+200 ms; if a message in backoff held the key's
    # only slot (or the head of its queue) the b messages would come after A's last attempt.
    assert max(c.start for c in b_calls) < a_calls[-1].start, (
        "the key's other messages waited for a message in backoff"
    )
    assert destination.snapshot(group).max_active <= 1
    qstash.dlq.delete(dead[a].dlq_id)


def test_rate_holds_with_retries(qstash, destination, jitter):
    k, group = key("rate"), grp("rate")
    rate, period = 3, 1
    failures = {0: 1, 1: 0, 2: 0, 3: 1, 4: 0}
    for seq, n in failures.items():
        destination.script(group, seq, [Reply(503, b"busy")] * n)
        publish(
            qstash, url=destination.target(group, seq, 100), body=f"rate {seq}", retries=2,
            flow_control={"key": k, "rate": rate, "period": period},
        )
    total = sum(n + 1 for n in failures.values())
    destination.wait_for(group, total, timeout=15)
    time.sleep(0.3)
    g = destination.snapshot(group)
    assert len(g.arrivals) == total
    starts = sorted(a.start for a in g.arrivals)
    windows = fixed_windows(starts, period, jitter)
    rel = [[round(t - starts[0], 3) for t in w] for w in windows]
    assert all(len(w) <= rate for w in windows), f"more than {rate} calls (retries included) in a window: {rel}"
    min_span = (math.ceil(total / rate) - 1) * period - jitter
    assert starts[-1] - starts[0] >= min_span, f"{total} calls at {rate}/{period}s came too fast: {rel}"
    for seq, n in failures.items():
        assert [c.status for c in destination.calls(group, seq)] == [503] * n + [200]


# ---------------------------------------------------------------------------------------------
# 3. Delays


def test_delayed_messages_wait_for_their_time(qstash, destination):
    group = grp("delay")
    t0 = time.monotonic()
    a = publish(qstash, url=destination.target(group, "a"), body="one second", delay="1s")
    t1 = time.monotonic()
    nb = int(time.time()) + 2
    # Not-before wins over a delay: with the hour honoured the message would never come here.
    b = publish(qstash, url=destination.target(group, "b"), body="not before", not_before=nb, delay="1h")
    c = publish(qstash, url=destination.target(group, "c"), body="cancelled", delay="1s")

    got = {}
    for mid in (a, b, c):
        raw = raw_message(qstash, mid)
        assert raw["state"] == "DELAYED", raw
        assert raw["nextDeliveryAt"] == raw["notBefore"], raw
        assert raw["retried"] == 0
        got[mid] = qstash.message.get(mid)
    assert got[a].not_before == got[a].created_at + 1000, got[a]
    assert got[c].not_before == got[c].created_at + 1000, got[c]
    assert got[b].not_before == nb * 1000, got[b]
    assert got[a].url == destination.target(group, "a") and got[a].body == "one second"

    qstash.message.cancel(c)
    assert is_gone(qstash, c)
    assert destination.count(group) == 0, "a delayed message came at once"

    destination.wait_for(group, 2, timeout=5)
    [call_a] = destination.calls(group, "a")
    [call_b] = destination.calls(group, "b")
    assert call_a.body == b"one second" and call_b.body == b"not before"
    slack = DELAY_SLACK + CLOCK_GRANULARITY
    # Against the publish call (the server's publication time lies between t0 and t1).
    assert call_a.start >= t0 + 1.0, f"delay 1s: arrived {call_a.start - t0:.3f} s after publishing"
    assert call_a.start <= t1 + 1.0 + slack, f"delay 1s: arrived {call_a.start - t1:.3f} s after publishing"
    # Against the server's own due time (notBefore, Unix ms).
    for name, call, due in (("delay", call_a, got[a].not_before), ("not-before", call_b, got[b].not_before)):
        late = wall(call.start) - due / 1000
        assert late >= -0.001, f"{name}: arrived {-late * 1000:.1f} ms before its time"
        assert late <= slack, f"{name}: arrived {late * 1000:.1f} ms after its time (bound {slack * 1000:.0f} ms)"
    time.sleep(0.2)
    assert destination.calls(group, "c") == [], "a cancelled delayed message was delivered"
    assert destination.count(group) == 2


def test_delay_formats(qstash, destination):
    group = grp("formats")
    cases = {"1500ms": 1_500, "10s": 10_000, "2m": 120_000, "1m30s": 90_000, "1h": 3_600_000,
             "1d": 86_400_000, 5: 5_000}
    ids = {}
    for i, (delay, ms) in enumerate(cases.items()):
        ids[delay] = publish(qstash, url=destination.target(group, i), body=str(delay), delay=delay)
    for delay, ms in cases.items():
        raw = raw_message(qstash, ids[delay])
        assert raw["state"] == "DELAYED", (delay, raw)
        assert raw["notBefore"] - raw["createdAt"] == ms, (delay, raw)
    assert qstash.message.cancel_many(list(ids.values())) == len(cases)
    assert all(is_gone(qstash, mid) for mid in ids.values())
    assert destination.count(group) == 0


# ---------------------------------------------------------------------------------------------
# 4. Callbacks


def test_success_and_failure_callbacks(qstash, destination, receiver):
    group, cb = grp("cb"), grp("cb-calls")
    destination.verify(cb, receiver)
    # Success on the second attempt: a 201 with a binary body and a header of its own.
    destination.script(group, "ok", [Reply(500, b"first fails"), Reply(201, b"made \xff\x00 it", {"X-Resp": "yes"})])
    # Failure: both attempts answer 503.
    destination.script(group, "bad", [Reply(503, b"nope"), Reply(503, b"still nope \xfe")])
    common = dict(
        content_type="text/plain",
        headers={"X-Src": "s"},
        retries=1,
        callback_headers={"X-Cb-Token": "abc"},
        failure_callback_headers={"X-Fcb-Token": "xyz"},
    )
    t0 = now_ms()
    ok = publish(
        qstash, url=destination.target(group, "ok"), body="to succeed ✓",
        callback=destination.target(cb, "ok-success"), failure_callback=destination.target(cb, "ok-failure"),
        **common,
    )
    bad = publish(
        qstash, url=destination.target(group, "bad"), body="to fail ✗",
        callback=destination.target(cb, "bad-success"), failure_callback=destination.target(cb, "bad-failure"),
        **common,
    )
    t1 = now_ms()
    dead = wait_dead(qstash, [bad])
    destination.wait_for(cb, 2, timeout=10)
    time.sleep(0.3)
    assert destination.calls(cb, "ok-failure") == [], "a failure callback for a delivered message"
    assert destination.calls(cb, "bad-success") == [], "a success callback for a dead-lettered message"
    assert_no_bad_signature(destination, cb)

    [s] = destination.calls(cb, "ok-success")
    [f] = destination.calls(cb, "bad-failure")
    for call, source in ((s, ok), (f, bad)):
        assert call.method == "POST"
        assert call.headers.get("upstash-message-id"), "callback calls carry Upstash-Message-Id"
        assert call.headers.get("upstash-signature"), "callback calls are signed"
        assert call.headers.get("content-type", "").startswith("application/json")
    assert s.headers.get("x-cb-token") == "abc" and "x-fcb-token" not in s.headers
    assert f.headers.get("x-fcb-token") == "xyz" and "x-cb-token" not in f.headers

    doc = json.loads(s.body)
    assert doc["status"] == 201
    assert base64.b64decode(doc["body"]) == b"made \xff\x00 it"
    assert hget(doc["header"], "X-Resp") == ["yes"], doc["header"]
    assert doc["retried"] == 1 and doc["maxRetries"] == 1
    assert doc["sourceMessageId"] == ok
    assert doc["url"] == destination.target(group, "ok") and doc["method"] == "POST"
    assert hget(doc["sourceHeader"], "X-Src") == ["s"], doc["sourceHeader"]
    assert base64.b64decode(doc["sourceBody"]) == "to succeed ✓".encode()
    assert t0 - 1000 <= doc["createdAt"] <= t1 + 1000, (t0, doc["createdAt"], t1)
    assert isinstance(doc["notBefore"], int)
    assert "dlqId" not in doc

    doc = json.loads(f.body)
    assert doc["status"] == 503
    assert base64.b64decode(doc["body"]) == b"still nope \xfe"
    assert doc["retried"] == 1 and doc["maxRetries"] == 1
    assert doc["dlqId"] == dead[bad].dlq_id
    assert doc["sourceMessageId"] == bad
    assert doc["url"] == destination.target(group, "bad") and doc["method"] == "POST"
    assert hget(doc["sourceHeader"], "X-Src") == ["s"], doc["sourceHeader"]
    assert base64.b64decode(doc["sourceBody"]) == "to fail ✗".encode()
    assert t0 - 1000 <= doc["createdAt"] <= t1 + 1000
    assert isinstance(doc["notBefore"], int)
    assert isinstance(doc["header"], dict)
    qstash.dlq.delete(dead[bad].dlq_id)


# ---------------------------------------------------------------------------------------------
# 5. Messages API


def test_message_get_and_cancel_while_waiting(qstash, destination):
    k, group = key("msgs"), grp("msgs")
    qstash.flow_control.pause(k)
    fc = {"key": k, "parallelism": 1}
    t0 = now_ms()
    ids = [
        publish(
            qstash, url=destination.target(group, i), body=f"waiting {i}", retries=2, headers={"X-I": str(i)},
            callback=destination.target(group, "cb"), failure_callback=destination.target(group, "fcb"),
            flow_control=fc,
        )
        for i in range(3)
    ]
    t1 = now_ms()
    m = qstash.message.get(ids[0])
    assert m.message_id == ids[0]
    assert m.url == destination.target(group, 0) and m.method == "POST" and m.body == "waiting 0"
    assert m.max_retries == 2
    assert t0 - 1000 <= m.created_at <= t1 + 1000, (t0, m.created_at, t1)
    assert isinstance(m.not_before, int)
    assert m.callback == destination.target(group, "cb")
    assert m.failure_callback == destination.target(group, "fcb")
    assert m.flow_control is not None and m.flow_control.key == k and m.flow_control.parallelism == 1
    assert hget(m.headers, "X-I") == ["0"], m.headers
    raw = raw_message(qstash, ids[0])
    assert raw["state"] == "WAITING" and raw["retried"] == 0, raw

    qstash.message.cancel(ids[0])
    assert is_gone(qstash, ids[0])
    expect_status(404, qstash.message.cancel, ids[0])
    assert qstash.message.cancel_many([ids[1], "0-999999999", "not-an-id"]) == 1
    assert is_gone(qstash, ids[1])
    assert qstash.message.get(ids[2]).message_id == ids[2]
    assert qstash.flow_control.get(k).wait_list_size == 1

    qstash.message.cancel(ids[2])
    qstash.flow_control.resume(k)
    time.sleep(0.3)
    assert destination.count(group) == 0, "a cancelled message was delivered"


def test_cancel_by_key_and_cancel_all(qstash, destination, token):
    k1, k2, group = key("bykey-1"), key("bykey-2"), grp("bykey")
    qstash.flow_control.pause(k1)
    qstash.flow_control.pause(k2)
    on_k1 = [publish(qstash, url=destination.target(group, f"k1-{i}"), body="x", flow_control={"key": k1, "rate": 5})
             for i in range(3)]
    on_k2 = [publish(qstash, url=destination.target(group, f"k2-{i}"), body="x", flow_control={"key": k2, "rate": 5})
             for i in range(2)]
    delayed_k1 = publish(qstash, url=destination.target(group, "k1-delayed"), body="x", delay="1h",
                         flow_control={"key": k1, "rate": 5})

    res = raw_request("DELETE", "/v2/messages?" + urllib.parse.urlencode({"flowControlKey": k1}), token=token)
    assert res.status == 200, (res.status, res.body)
    assert res.json() == {"cancelled": 4}, res.json()
    assert all(is_gone(qstash, mid) for mid in on_k1 + [delayed_k1])
    assert qstash.flow_control.get(k1).wait_list_size == 0
    assert all(raw_message(qstash, mid)["state"] == "WAITING" for mid in on_k2), "another key's messages"
    res = raw_request("DELETE", "/v2/messages?" + urllib.parse.urlencode({"flowControlKey": key("no-such")}),
                      token=token)
    assert res.status == 200 and res.json() == {"cancelled": 0}, (res.status, res.body)

    unkeyed_delayed = publish(qstash, url=destination.target(group, "delayed"), body="x", delay="1h")
    cancelled = qstash.message.cancel_all()
    # Earlier tests wait for their own messages, so only these three should be pending; a
    # stray message of a failed earlier test could add to the count, hence >=, and the exact
    # check is the second call.
    assert cancelled >= 3, cancelled
    assert all(is_gone(qstash, mid) for mid in on_k2 + [unkeyed_delayed])
    assert qstash.message.cancel_all() == 0, "cancel_all left something pending"
    qstash.flow_control.resume(k1)
    qstash.flow_control.resume(k2)
    time.sleep(0.3)
    assert destination.count(group) == 0, "a cancelled message was delivered"


def test_cancel_in_flight_is_409(qstash, destination):
    group = grp("inflight")
    release = destination.gate(group, "held")
    try:
        mid = publish(qstash, url=destination.target(group, "held"), body="held", retries=0)
        wait_until(lambda: destination.calls(group, "held"), 5, "the held call to arrive")
        assert raw_message(qstash, mid)["state"] == "ACTIVE"
        body = expect_status(409, qstash.message.cancel, mid)
        assert isinstance(body, dict) and "error" in body, body
        assert qstash.message.cancel_many([mid]) == 0, "a call in flight is not cancelled"
    finally:
        release.set()
    destination.wait_for(group, 1, timeout=5)
    wait_until(lambda: is_gone(qstash, mid), 5, "the delivered message to be gone")
    time.sleep(0.2)
    assert len(destination.calls(group, "held")) == 1
    assert not dlq_entries(qstash, mid)


def test_retry_delay_expression_sets_each_wait(qstash, destination, jitter):
    """`retry_delay` (`Upstash-Retry-Delay`) replaces the backoff: the wait after the failed
    attempt carrying `Upstash-Retried: n` is the expression at `retried = n`, in ms, with no
    jitter; `message.get` shows the expression while the message is held."""
    group = grp("retry-delay")
    expression = "max(60, 60 * (1 + retried))"
    destination.script(group, "m", [Reply(500, b"down")] * 3)
    mid = publish(qstash, url=destination.target(group, "m"), body="custom", retries=3, retry_delay=expression)

    def held_for_a_retry():
        raw = raw_message(qstash, mid)
        return raw if raw.get("retried", 0) >= 1 else None

    shown = wait_until(held_for_a_retry, 10, "the message held for its first retry", interval=0.01)
    assert shown["retryDelayExpression"] == expression, shown
    assert qstash.message.get(mid).retry_delay_expression == expression
    destination.wait_for(group, 4, timeout=10)
    time.sleep(0.2)
    calls = destination.calls(group, "m")
    assert len(calls) == 4, f"{len(calls)} attempts, want 4"
    for n in range(3):
        gap = calls[n + 1].start - calls[n].end
        want = 0.060 * (1 + n)
        assert want - BACKOFF_EPS <= gap <= want + jitter, (
            f"retry {n + 1} came {gap * 1000:.1f} ms after the failed attempt; the expression gives {want * 1000:.0f} ms"
        )


def test_deduplication_by_id_and_by_content(qstash, destination, token):
    """A publish repeating a deduplication id (`deduplication_id`) or, with
    `content_based_deduplication`, the destination, body and headers of one accepted in the last
    10 minutes is answered 202 with the first message's id and `deduplicated`, and nothing more
    is delivered."""
    group = grp("dedup")
    first = qstash.message.publish(url=destination.target(group, "id"), body="one", deduplication_id=f"{RUN}-order")
    assert not first.deduplicated
    again = qstash.message.publish(url=destination.target(group, "id"), body="two", deduplication_id=f"{RUN}-order")
    assert again.deduplicated and again.message_id == first.message_id, (first, again)
    other = publish(qstash, url=destination.target(group, "id2"), body="one", deduplication_id=f"{RUN}-other")
    assert other != first.message_id

    by_content = dict(url=destination.target(group, "content"), body="same", headers={"X-A": "1"},
                      content_based_deduplication=True)
    a = qstash.message.publish(**by_content)
    b = qstash.message.publish(**by_content)
    assert not a.deduplicated and b.deduplicated and b.message_id == a.message_id, (a, b)
    c = qstash.message.publish(**{**by_content, "body": "different"})
    d = qstash.message.publish(**{**by_content, "headers": {"X-A": "2"}})
    assert not c.deduplicated and not d.deduplicated and len({a.message_id, c.message_id, d.message_id}) == 3

    # The status, as the reference sends it: 201 for the first, 202 for a repeat.
    path = "/v2/publish/" + destination.target(group, "raw")
    headers = {"Upstash-Deduplication-Id": f"{RUN}-raw", "Content-Type": "text/plain"}
    r1 = raw_request("POST", path, token=token, headers=headers, body=b"x")
    r2 = raw_request("POST", path, token=token, headers=headers, body=b"x")
    assert (r1.status, r2.status) == (201, 202), (r1, r2)
    assert json.loads(r2.body) == {"messageId": json.loads(r1.body)["messageId"], "deduplicated": True}

    destination.wait_for(group, 6, timeout=10)
    time.sleep(0.3)
    delivered = sorted((a.seq, a.body.decode()) for a in destination.snapshot(group).arrivals)
    assert delivered == [("content", "different"), ("content", "same"), ("content", "same"), ("id", "one"),
                         ("id2", "one"), ("raw", "x")], delivered


def test_redacted_fields_are_hashed_in_the_api_but_delivered_as_sent(qstash, destination):
    """`redact` (`Upstash-Redact-Fields`): `message.get` and the DLQ show the body and the chosen
    headers as `REDACTED:<sha256>`; the destination gets the real values."""
    group = grp("redact")
    sha = lambda text: "REDACTED:" + hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
    held = publish(qstash, url=destination.target(group, "held"), body="secret body", delay="30s",
                   headers={"X-Secret": "s3", "X-Plain": "p"}, redact={"body": True, "header": ["X-Secret"]})
    shown = qstash.message.get(held)
    assert shown.body == sha("secret body"), shown.body
    assert hget(shown.headers, "X-Secret") == [sha("s3")] and hget(shown.headers, "X-Plain") == ["p"], shown.headers
    qstash.message.cancel(held)

    destination.script(group, "dead", [Reply(500, b"no")])
    dead_id = publish(qstash, url=destination.target(group, "dead"), body="secret body", retries=0,
                      headers={"X-Secret": "s3"}, redact={"header": True})
    entry = wait_dead(qstash, [dead_id])[dead_id]
    assert entry.body == "secret body" and hget(entry.headers, "X-Secret") == [sha("s3")], entry
    calls = destination.calls(group, "dead")
    assert len(calls) == 1 and calls[0].body == b"secret body" and calls[0].headers.get("x-secret") == "s3", calls


def test_cancel_during_backoff(qstash, destination):
    group = grp("backoff")
    destination.script(group, "m", [Reply(500, b"down")] * 20)
    mid = publish(qstash, url=destination.target(group, "m"), body="backing off", retries=8)

    def in_backoff():
        raw = raw_message(qstash, mid)
        if raw.get("state") == "RETRY" and raw["retried"] >= 4 and raw["nextDeliveryAt"] - now_ms() >= 60:
            return raw
        return None

    raw = wait_until(in_backoff, 10, "the message in a backoff of at least 200 ms", interval=0.01)
    calls_before = len(destination.calls(group, "m"))
    assert calls_before == raw["retried"], (calls_before, raw)
    assert raw["maxRetries"] == 8
    qstash.message.cancel(mid)
    assert is_gone(qstash, mid)
    time.sleep(max(0.0, raw["nextDeliveryAt"] / 1000 - time.time()) + 0.3)
    assert len(destination.calls(group, "m")) == calls_before, "a message cancelled in backoff was retried"
    assert not dlq_entries(qstash, mid), "a cancelled message went to the DLQ"


# ---------------------------------------------------------------------------------------------
# 6. Dead letter queue


def test_dead_letter_queue(qstash, destination, token):
    k, group = key("dlq"), grp("dlq")
    fc = {"key": k, "parallelism": 5}
    scripts = {
        0: (0, [Reply(500, b"err-0", {"X-Why": "test"})]),
        1: (0, [Reply(500, b"err-1", {"X-Why": "test"})]),
        2: (0, [Reply(500, b"err-2", {"X-Why": "test"})]),
        3: (0, [Reply(404, b"err-3")]),
        4: (1, [Reply(404, b"err-4a"), Reply(404, b"err-4")]),
    }
    ids = {}
    label = lambda seq: f"{RUN}-odd" if seq % 2 else None  # noqa: E731
    for seq, (retries, replies) in scripts.items():
        destination.script(group, seq, replies)
        ids[seq] = publish(
            qstash, url=destination.target(group, seq), body=f"dlq body {seq}", retries=retries,
            headers={"X-Seq": str(seq)}, flow_control=fc, label=label(seq),
        )
    dead = wait_dead(qstash, list(ids.values()))
    dlq = {seq: dead[ids[seq]].dlq_id for seq in ids}
    assert len(set(dlq.values())) == 5

    for seq, (retries, replies) in scripts.items():
        e = qstash.dlq.get(dlq[seq])
        assert e.dlq_id == dlq[seq] and e.message_id == ids[seq]
        assert e.url == destination.target(group, seq) and e.method == "POST"
        assert e.body == f"dlq body {seq}"
        assert e.max_retries == retries
        assert e.response_status == replies[-1].status
        assert e.response_body == replies[-1].body.decode()
        assert hget(e.headers, "X-Seq") == [str(seq)], e.headers
        assert e.flow_control is not None and e.flow_control.key == k
        assert e.label == label(seq), (seq, e.label)
        if seq < 3:
            assert hget(e.response_headers, "X-Why") == ["test"], e.response_headers

    # Filters
    by_url = qstash.dlq.list(filter={"url": destination.target(group, 0)}).messages
    assert [e.dlq_id for e in by_url] == [dlq[0]]
    by_status = qstash.dlq.list(filter={"response_status": 404}).messages
    assert all(e.response_status == 404 for e in by_status)
    assert {e.dlq_id for e in by_status} & set(dlq.values()) == {dlq[3], dlq[4]}
    assert [e.dlq_id for e in qstash.dlq.list(filter={"message_id": ids[2]}).messages] == [dlq[2]]
    by_label = qstash.dlq.list(filter={"label": f"{RUN}-odd"}).messages
    assert sorted(e.dlq_id for e in by_label) == sorted([dlq[1], dlq[3]]), by_label

    # Paging: pages of at most 2 cover the DLQ exactly once.
    seen, cursor, pages = [], None, 0
    while True:
        page = qstash.dlq.list(cursor=cursor, count=2)
        assert len(page.messages) <= 2
        seen.extend(e.dlq_id for e in page.messages)
        pages += 1
        cursor = page.cursor
        if not cursor:
            break
        assert pages < 1000, "paging does not end"
    assert len(seen) == len(set(seen)), f"an entry on two pages: {seen}"
    assert set(dlq.values()) <= set(seen)
    assert pages >= 3

    # Delete one, delete many.
    qstash.dlq.delete(dlq[0])
    expect_status(404, qstash.dlq.get, dlq[0])
    expect_status(404, qstash.dlq.delete, dlq[0])
    assert qstash.dlq.delete_many([dlq[1], dlq[2], "1-999999999"]) == 2
    for seq in (1, 2):
        expect_status(404, qstash.dlq.get, dlq[seq])
    assert qstash.dlq.delete_many([dlq[1]]) == 0

    # Retry: republished under the same key (paused, so it waits where `get` can see it).
    qstash.flow_control.pause(k)
    bad = raw_request("POST", f"/v2/dlq/retry/{dlq[4]}", token=token, headers={"Upstash-Retries": "21"})
    assert bad.status == 400 and "Upstash-Retries" in bad.json()["error"], (bad.status, bad.body)
    assert qstash.dlq.get(dlq[4]).dlq_id == dlq[4], "a refused retry removed the entry"

    res = raw_request("POST", f"/v2/dlq/retry/{dlq[3]}", token=token, headers={"Upstash-Retries": "0"})
    assert res.status in (200, 201), (res.status, res.body)
    new3 = res.json()["messageId"]
    res = raw_request("POST", f"/v2/dlq/retry/{dlq[4]}", token=token)
    assert res.status in (200, 201), (res.status, res.body)
    new4 = res.json()["messageId"]
    assert len({new3, new4, ids[3], ids[4]}) == 4, "a retry is a new message"
    for seq in (3, 4):
        expect_status(404, qstash.dlq.get, dlq[seq])
    for seq, new, retries in ((3, new3, 0), (4, new4, 1)):
        m = qstash.message.get(new)
        assert m.url == destination.target(group, seq) and m.body == f"dlq body {seq}"
        assert m.max_retries == retries, f"retry of {seq}: maxRetries {m.max_retries}, want {retries}"
        assert m.flow_control is not None and m.flow_control.key == k
        assert hget(m.headers, "X-Seq") == [str(seq)]
        assert raw_message(qstash, new)["state"] == "WAITING"
    assert qstash.flow_control.get(k).wait_list_size == 2

    qstash.flow_control.resume(k)
    wait_until(lambda: len(destination.calls(group, 3)) == 2 and len(destination.calls(group, 4)) == 3
               and all(c.end for c in destination.calls(group, 3) + destination.calls(group, 4)),
               10, "the retried dead letters to be delivered")
    for seq, new in ((3, new3), (4, new4)):
        last = destination.calls(group, seq)[-1]
        assert last.status == 200
        assert last.headers.get("upstash-message-id") == new
        assert last.headers.get("upstash-retried") == "0"
        assert last.body == f"dlq body {seq}".encode() and last.headers.get("x-seq") == str(seq)
        wait_until(lambda: is_gone(qstash, new), 5, f"retried message {seq} to be done")
        assert not dlq_entries(qstash, new)

    missing = raw_request("POST", "/v2/dlq/retry/1-999999999", token=token)
    assert missing.status == 404, (missing.status, missing.body)


# ---------------------------------------------------------------------------------------------
# 7. Bad input, credentials, unknown ids


BAD_PUBLISH = [
    ("Upstash-Retries", {"retries": 21}),
    ("Upstash-Retries", {"retries": -1}),
    ("Upstash-Retries", {"retries": "two"}),
    ("Upstash-Retries", {"retries": 1.5}),
    ("Upstash-Delay", {"delay": "-5s"}),
    ("Upstash-Delay", {"delay": -5}),
    ("Upstash-Delay", {"delay": "soon"}),
    ("Upstash-Delay", {"delay": "10x"}),
    ("Upstash-Not-Before", {"not_before": "soon"}),
    ("Upstash-Not-Before", {"not_before": "12.5"}),
    ("Upstash-Callback", {"callback": "cb/relative"}),
    ("Upstash-Callback", {"callback": "ftp://example.com/x"}),
    ("Upstash-Failure-Callback", {"failure_callback": "/fail"}),
    ("Upstash-Retry-Delay", {"retry_delay": "pow(2, tries) * 1000"}),
    ("Upstash-Retry-Delay", {"retry_delay": "sqrt(1, 2)"}),
    ("Upstash-Retry-Delay", {"retry_delay": "(100"}),
    ("Upstash-Deduplication-Id", {"deduplication_id": ""}),
    ("Upstash-Deduplication-Id", {"deduplication_id": "x" * 513}),
    ("Upstash-Content-Based-Deduplication", {"content_based_deduplication": "maybe"}),
    ("Upstash-Label", {"label": ""}),
    ("Upstash-Redact-Fields", {"redact": {"header": [""]}}),
]


def test_bad_publish_headers_are_400(qstash, destination):
    group = grp("bad")
    problems = []
    for i, (header, kwargs) in enumerate(BAD_PUBLISH):
        try:
            qstash.message.publish(url=destination.target(group, i), body="never", **kwargs)
            problems.append(f"{kwargs}: accepted")
            continue
        except QStashError as exc:
            status, body = sdk_error(exc)
        if status != 400:
            problems.append(f"{kwargs}: status {status}, want 400")
        elif not (isinstance(body, dict) and isinstance(body.get("error"), str)):
            problems.append(f"{kwargs}: body {body!r} is not {{\"error\": ...}}")
        elif header.lower() not in body["error"].lower():
            problems.append(f"{kwargs}: error {body['error']!r} does not name {header}")
    assert not problems, "\n".join(problems)

    # The bounds themselves are accepted.
    publish(qstash, url=destination.target(group, "r20"), body="ok", retries=20)
    publish(qstash, url=destination.target(group, "r0"), body="ok", retries=0)
    destination.wait_for(group, 2, timeout=5)
    time.sleep(0.2)
    assert sorted(a.seq for a in destination.snapshot(group).arrivals) == ["r0", "r20"], "a refused publish was delivered"


def test_new_routes_need_credentials(qstash, destination, base_url, token):
    k, group = key("auth"), grp("auth")
    qstash.flow_control.pause(k)
    waiting = publish(qstash, url=destination.target(group, "w"), body="w", flow_control={"key": k, "rate": 1})
    destination.script(group, "d", [Reply(500, b"x")])
    dead_id = publish(qstash, url=destination.target(group, "d"), body="d", retries=0)
    dlq_id = wait_dead(qstash, [dead_id])[dead_id].dlq_id

    ids = json.dumps({"messageIds": [waiting]}).encode()
    dlq_ids = json.dumps({"dlqIds": [dlq_id]}).encode()
    json_type = {"Content-Type": "application/json"}
    calls = [
        ("GET", f"/v2/messages/{waiting}", None, {}),
        ("DELETE", f"/v2/messages/{waiting}", None, {}),
        ("DELETE", "/v2/messages", ids, json_type),
        ("DELETE", "/v2/messages", None, {}),
        ("DELETE", "/v2/messages?" + urllib.parse.urlencode({"flowControlKey": k}), None, {}),
        ("GET", "/v2/dlq", None, {}),
        ("GET", f"/v2/dlq/{dlq_id}", None, {}),
        ("DELETE", f"/v2/dlq/{dlq_id}", None, {}),
        ("DELETE", "/v2/dlq", dlq_ids, json_type),
        ("POST", f"/v2/dlq/retry/{dlq_id}", None, {}),
        ("POST", f"/v2/publish/{destination.target(group, 'p')}", b"p",
         {"Upstash-Retries": "1", "Upstash-Delay": "1s", "Upstash-Callback": destination.target(group, "cb")}),
    ]
    wrong = []
    for method, path, body, headers in calls:
        res = raw_request(method, path, headers=headers, body=body)  # no Authorization at all
        if res.status != 401:
            wrong.append(f"{method} {path} without credentials: {res.status} {res.body[:200]!r}")
    bad = QStash("not-the-token", base_url=base_url, retry=False)
    for name, call in [
        ("message.get", lambda: bad.message.get(waiting)),
        ("message.cancel", lambda: bad.message.cancel(waiting)),
        ("message.cancel_many", lambda: bad.message.cancel_many([waiting])),
        ("message.cancel_all", lambda: bad.message.cancel_all()),
        ("dlq.list", lambda: bad.dlq.list()),
        ("dlq.get", lambda: bad.dlq.get(dlq_id)),
        ("dlq.delete", lambda: bad.dlq.delete(dlq_id)),
        ("dlq.delete_many", lambda: bad.dlq.delete_many([dlq_id])),
        ("publish with retries", lambda: bad.message.publish(url=destination.target(group, "p"), body="p", retries=1)),
    ]:
        try:
            call()
            wrong.append(f"{name} with a wrong token: succeeded")
        except QStashError as exc:
            status, body = sdk_error(exc)
            if status != 401:
                wrong.append(f"{name} with a wrong token: {status} {body!r}")
    assert not wrong, "\n".join(wrong)

    # Nothing was changed by the refused calls.
    assert raw_message(qstash, waiting)["state"] == "WAITING"
    assert qstash.dlq.get(dlq_id).dlq_id == dlq_id
    qstash.message.cancel(waiting)
    qstash.dlq.delete(dlq_id)
    qstash.flow_control.resume(k)
    time.sleep(0.3)
    assert destination.calls(group, "p") == [] and destination.calls(group, "w") == []


def test_unknown_ids_are_404(qstash, token):
    for mid in ("0-999999999", "not-a-message-id"):
        expect_status(404, qstash.message.get, mid)
        expect_status(404, qstash.message.cancel, mid)
    for dlq_id in ("1-999999999", "not-a-dlq-id"):
        expect_status(404, qstash.dlq.get, dlq_id)
        expect_status(404, qstash.dlq.delete, dlq_id)
        res = raw_request("POST", f"/v2/dlq/retry/{dlq_id}", token=token)
        assert res.status == 404, (dlq_id, res.status, res.body)
