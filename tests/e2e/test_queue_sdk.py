"""End-to-end: the PyPI `qstash` 3.4.0 client against `flowvec-server` (`server/`), which must deliver
published messages to a local destination (`conftest.Destination`) under flow control.

What is observed: the destination stamps each call on arrival (`time.monotonic()`), holds it,
and counts concurrent calls per group; the active count drops *before* the response is written,
so the parallelism assertion needs no tolerance.

Rate windows (DESIGN §1.3) are fixed windows: the first dispatch when no window is open starts one
at that instant; at most `rate` dispatches fall inside `[start, start + period)`; the first dispatch
after it opens the next window. The test sees arrivals, not dispatches: an arrival is a dispatch
plus network/thread latency of at most `jitter` (FLOWVEC_E2E_JITTER_MS, default 150 ms). The
reconstruction below gives every window the earliest start consistent with that latency, so the
windows it builds end no later than the server's: a correct server cannot fail the check unless
a dispatch falls within `jitter` of a window's end *and* arrives late. With parallelism 2, a
300 ms hold and rate 5 per 1 s, the fifth dispatch of a window happens about 600 ms in, so
no dispatch comes near a window's end.

Keys are unique per run (`run_id`), so a long-lived server gives the same results.
"""

from __future__ import annotations

import json
import math
import os
import time

import pytest
from qstash import QStash
from qstash.errors import QStashError

from conftest import fixed_windows, wait_until

RUN_ID = f"{int(time.time())}-{os.getpid()}"


def key(name: str) -> str:
    return f"e2e-{RUN_ID}-{name}"


def list_flow_control(q: QStash) -> list[dict]:
    """`GET /v2/flowControl`: no SDK method in qstash 3.4.0, so use the SDK's own transport."""
    return q.http.request(path="/v2/flowControl", method="GET")


# ---------------------------------------------------------------------------------------------
# Flow control under load


def test_flow_control_limits_parallelism_and_rate(qstash, destination, jitter):
    k, group = key("limits"), "limits"
    n, parallelism, rate, period, hold_ms = 15, 2, 5, 1, 300
    fc = {"key": k, "parallelism": parallelism, "rate": rate, "period": period}

    ids = []
    for seq in range(n):
        res = qstash.message.publish_json(
            url=destination.target(group, seq, hold_ms), body={"seq": seq}, flow_control=fc
        )
        ids.append(res.message_id)
    assert all(isinstance(i, str) and i for i in ids), ids
    assert len(set(ids)) == n, f"message ids not unique: {ids}"

    # Key info while messages wait. Dispatched-at-the-time-of-get lies between what had
    # arrived before the call and what had arrived after it plus the calls still in flight.
    arrived_before = destination.count(group)
    info = qstash.flow_control.get(k)
    arrived_after = destination.count(group)
    assert info.key == k
    assert info.parallelism_max == parallelism
    assert info.rate_max == rate
    assert info.rate_period == period
    assert info.is_paused is False
    assert info.is_pinned_parallelism is False and info.is_pinned_rate is False
    assert 0 <= info.parallelism_count <= parallelism
    assert 0 <= info.rate_count <= rate
    assert n - arrived_after - parallelism <= info.wait_list_size <= n - arrived_before, (
        info, arrived_before, arrived_after
    )
    assert abs(time.time() - info.rate_period_start) < 30, "ratePeriodStart is not Unix seconds"

    g = destination.wait_for(group, n, timeout=20)

    seqs = sorted(int(a.seq) for a in g.arrivals)
    assert seqs == list(range(n)), f"each message must arrive exactly once: {seqs}"
    for a in g.arrivals:
        assert a.method == "POST"
        assert json.loads(a.body) == {"seq": int(a.seq)}

    assert g.max_active <= parallelism, f"observed concurrency {g.max_active} > parallelism {parallelism}"
    assert g.max_active == parallelism, "parallelism was never used: the dispatcher is not concurrent"

    starts = sorted(a.start for a in g.arrivals)
    windows = fixed_windows(starts, period, jitter)
    rel = [[round(t - starts[0], 3) for t in w] for w in windows]
    assert all(len(w) <= rate for w in windows), f"more than {rate} arrivals in a window: {rel}"
    assert len(windows) >= math.ceil(n / rate), rel
    min_span = (math.ceil(n / rate) - 1) * period - jitter
    assert starts[-1] - starts[0] >= min_span, f"{n} messages at {rate}/{period}s arrived too fast: {rel}"


def test_publish_without_flow_control_is_delivered(qstash, destination):
    group = "plain"
    cap = qstash.flow_control.get_global_parallelism().parallelism_max
    for seq in range(3):
        qstash.message.publish_json(url=destination.target(group, seq, 1000), body={"seq": seq})
    g = destination.wait_for(group, 3, timeout=10)
    assert sorted(int(a.seq) for a in g.arrivals) == [0, 1, 2]
    want = 3 if cap == 0 else min(3, cap)
    assert g.max_active == want, "messages without a key are limited only by the global cap"


def test_service_flow_control_header_names_are_accepted(qstash, destination):
    # DESIGN §4: `Service-Flow-Control-*` works like `Upstash-Flow-Control-*`. No SDK sends it,
    # so send it through the SDK's own transport.
    k, group = key("service-headers"), "service"
    qstash.flow_control.pause(k)  # keep the message waiting so the key's configuration is visible
    res = qstash.http.request(
        path=f"/v2/publish/{destination.target(group, 0)}",
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Service-Flow-Control-Key": k,
            "Service-Flow-Control-Value": "parallelism=3,rate=4,period=2s",
        },
        body='{"via": "service"}',
    )
    assert isinstance(res.get("messageId"), str) and res["messageId"]
    info = qstash.flow_control.get(k)
    assert (info.parallelism_max, info.rate_max, info.rate_period, info.wait_list_size) == (3, 4, 2, 1)
    qstash.flow_control.resume(k)
    g = destination.wait_for(group, 1, timeout=10)
    assert json.loads(g.arrivals[0].body) == {"via": "service"}


# ---------------------------------------------------------------------------------------------
# Delivery details


def test_delivery_keeps_body_bytes_and_content_type(qstash, destination):
    group = "bytes"
    payload = b"\x00\x01\xfe\xffbinary\r\n"
    qstash.message.publish(
        url=destination.target(group, 0), body=payload, content_type="application/octet-stream"
    )
    qstash.message.publish_json(url=destination.target(group, 1), body={"a": [1, "b"]})
    g = destination.wait_for(group, 2, timeout=10)
    by_seq = {a.seq: a for a in g.arrivals}
    assert by_seq["0"].body == payload
    assert by_seq["0"].headers.get("content-type") == "application/octet-stream"
    assert json.loads(by_seq["1"].body) == {"a": [1, "b"]}
    assert by_seq["1"].headers.get("content-type") == "application/json"


def test_delivery_keeps_destination_query_string(qstash, destination):
    # The SDK appends the destination raw: its query string becomes the publish request's.
    group = "query"
    qstash.message.publish_json(url=destination.target(group, 0) + "?alpha=1&beta=two", body={})
    g = destination.wait_for(group, 1, timeout=10)
    assert g.arrivals[0].query == "alpha=1&beta=two"


# ---------------------------------------------------------------------------------------------
# Management calls


def test_pause_holds_messages_until_resume(qstash, destination):
    k, group = key("pause"), "pause"
    qstash.flow_control.pause(k)  # before the first message: creates the key
    info = qstash.flow_control.get(k)
    assert info.key == k and info.is_paused is True and info.wait_list_size == 0

    for seq in range(4):
        qstash.message.publish_json(
            url=destination.target(group, seq, 200), body={"seq": seq},
            flow_control={"key": k, "parallelism": 4},
        )
    time.sleep(1.5)
    assert destination.count(group) == 0, "a paused key delivered a message"
    info = qstash.flow_control.get(k)
    assert info.is_paused is True
    assert info.wait_list_size == 4
    assert info.parallelism_max == 4 and info.parallelism_count == 0

    listed = list_flow_control(qstash)
    assert isinstance(listed, list), f"GET /v2/flowControl must be a JSON array: {listed!r}"
    mine = [e for e in listed if e.get("flowControlKey") == k]
    assert len(mine) == 1, listed
    assert mine[0].get("waitListSize") == 4 and mine[0].get("isPaused") is True

    qstash.flow_control.resume(k)
    info = qstash.flow_control.get(k)
    assert info.is_paused is False
    g = destination.wait_for(group, 4, timeout=10)
    assert sorted(int(a.seq) for a in g.arrivals) == [0, 1, 2, 3]
    assert g.max_active <= 4


def test_pin_overrides_messages_and_unpin_releases_parts(qstash, destination):
    k, group = key("pin"), "pin"
    qstash.flow_control.pin(k, {"parallelism": 1, "rate": 3, "period": 2})
    info = qstash.flow_control.get(k)
    assert info.is_pinned_parallelism is True and info.is_pinned_rate is True
    assert (info.parallelism_max, info.rate_max, info.rate_period) == (1, 3, 2)

    # Messages asking for more cannot change pinned parts, and the pinned limits are enforced.
    loose = {"key": k, "parallelism": 7, "rate": 9, "period": 1}
    for seq in range(3):
        qstash.message.publish_json(url=destination.target(group, seq, 250), body={}, flow_control=loose)
    info = qstash.flow_control.get(k)
    assert (info.parallelism_max, info.rate_max, info.rate_period) == (1, 3, 2)
    g = destination.wait_for(group, 3, timeout=15)
    assert g.max_active == 1, f"pinned parallelism 1 but {g.max_active} calls ran at once"

    # Hold the next messages in the waitlist (paused) so the configuration they bring is visible.
    qstash.flow_control.pause(k)
    qstash.flow_control.unpin(k, {"parallelism": True})
    info = qstash.flow_control.get(k)
    assert info.is_pinned_parallelism is False and info.is_pinned_rate is True
    assert info.parallelism_max == 1, "unpinning keeps the last pinned value until a message changes it"

    qstash.message.publish_json(url=destination.target(group, 3), body={}, flow_control=loose)
    info = qstash.flow_control.get(k)
    assert info.wait_list_size == 1
    assert info.parallelism_max == 7, "unpinned parallelism follows the next message"
    assert (info.rate_max, info.rate_period) == (3, 2), "pinned rate must not follow the message"

    qstash.flow_control.unpin(k, {"rate": True, "parallelism": False})
    info = qstash.flow_control.get(k)
    assert info.is_pinned_rate is False and info.is_pinned_parallelism is False
    qstash.message.publish_json(url=destination.target(group, 4), body={}, flow_control=loose)
    info = qstash.flow_control.get(k)
    assert (info.parallelism_max, info.rate_max, info.rate_period) == (7, 9, 1)
    assert info.wait_list_size == 2

    qstash.flow_control.resume(k)
    destination.wait_for(group, 5, timeout=15)


def test_reset_rate_opens_a_fresh_window(qstash, destination):
    k, group = key("reset"), "reset"
    fc = {"key": k, "rate": 2, "period": 60}
    for seq in range(3):
        qstash.message.publish_json(url=destination.target(group, seq), body={}, flow_control=fc)
    destination.wait_for(group, 2, timeout=10)
    time.sleep(0.5)
    assert destination.count(group) == 2, "rate 2 per 60 s let a third message through"
    info = qstash.flow_control.get(k)
    assert (info.rate_max, info.rate_count, info.rate_period) == (2, 2, 60)
    assert info.wait_list_size == 1
    assert info.parallelism_max == 0, "parallelism unset: absent on the wire, 0 in the SDK"

    qstash.flow_control.reset_rate(k)
    destination.wait_for(group, 3, timeout=5)
    info = qstash.flow_control.get(k)
    assert info.rate_count == 1, "the message after resetRate opens a fresh window"
    assert info.wait_list_size == 0


def test_global_parallelism_counts_active_calls(qstash, destination):
    group = "global"
    before = qstash.flow_control.get_global_parallelism()
    assert isinstance(before.parallelism_max, int) and before.parallelism_max >= 0
    assert isinstance(before.parallelism_count, int)
    wait_until(lambda: qstash.flow_control.get_global_parallelism().parallelism_count == 0,
               10, "no active calls left from earlier tests")

    expect = 2 if before.parallelism_max == 0 else min(2, before.parallelism_max)
    for seq in range(2):
        qstash.message.publish_json(url=destination.target(group, seq, 1500), body={})
    wait_until(lambda: destination.snapshot(group).active == expect, 5, f"{expect} held calls")
    during = qstash.flow_control.get_global_parallelism()
    assert during.parallelism_count == expect
    assert during.parallelism_max == before.parallelism_max

    destination.wait_for(group, 2, timeout=10)
    wait_until(lambda: qstash.flow_control.get_global_parallelism().parallelism_count == 0,
               5, "global parallelismCount back to 0 after completion")


# ---------------------------------------------------------------------------------------------
# Errors


def test_unknown_key_is_404(qstash):
    with pytest.raises(QStashError, match="404"):
        qstash.flow_control.get(key("never-used"))


@pytest.mark.parametrize(
    "fc",
    [
        {"parallelism": 0},  # zero is not a limit
        {"period": 5},  # period without rate
        {"rate": 5, "period": "8d"},  # above 7 days
    ],
    ids=["parallelism-zero", "period-without-rate", "period-too-long"],
)
def test_bad_flow_control_value_is_400(qstash, destination, fc):
    with pytest.raises(QStashError, match="400"):
        qstash.message.publish_json(
            url=destination.target("rejected", 0), body={}, flow_control={"key": key("bad"), **fc}
        )
    time.sleep(0.3)
    assert destination.count("rejected") == 0


def test_pin_without_values_is_400(qstash):
    with pytest.raises(QStashError, match="400"):
        qstash.flow_control.pin(key("pin-empty"), {})


def test_wrong_token_is_401(base_url, destination):
    bad = QStash("not-the-token", base_url=base_url, retry=False)
    with pytest.raises(QStashError, match="401"):
        bad.flow_control.get_global_parallelism()
    with pytest.raises(QStashError, match="401"):
        bad.message.publish_json(url=destination.target("unauth", 0), body={})
    with pytest.raises(QStashError, match="401"):
        bad.flow_control.pause(key("unauth"))
    time.sleep(0.3)
    assert destination.count("unauth") == 0
