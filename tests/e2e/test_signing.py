"""End-to-end: signed deliveries. Every delivery carries `Upstash-Signature`, which the real
`qstash` SDK's `Receiver` (PyJWT underneath) accepts with the keys the SDK reads from
`GET /v2/keys`, and rejects for a tampered body; after `keys.rotate` the new current key (the
old next one) signs, so a receiver holding the old pair still verifies."""

from __future__ import annotations

import os
import time

import pytest
from qstash import QStash, Receiver
from qstash.errors import SignatureError

RUN = f"sig-{int(time.time())}-{os.getpid()}"


def deliver(q: QStash, destination, group: str, n: int):
    for i in range(n):
        q.message.publish(url=destination.target(group, i), body=f"{group} body {i}")
    return destination.wait_for(group, n, timeout=20).arrivals


def test_every_delivery_verifies_with_the_sdk_receiver(qstash: QStash, destination) -> None:
    keys = qstash.signing_key.get()
    assert keys.current.startswith("sig_") and keys.next.startswith("sig_")
    assert keys.current != keys.next
    receiver = Receiver(current_signing_key=keys.current, next_signing_key=keys.next)
    arrivals = deliver(qstash, destination, f"{RUN}-a", 5)
    for a in arrivals:
        signature = a.headers["upstash-signature"]
        receiver.verify(signature=signature, body=a.body.decode(), url=destination.url + a.path)
        with pytest.raises(SignatureError):
            receiver.verify(signature=signature, body=a.body.decode() + "!")
        with pytest.raises(SignatureError):
            Receiver(current_signing_key="sig_" + "w" * 43, next_signing_key="sig_" + "x" * 43).verify(
                signature=signature, body=a.body.decode()
            )
        assert a.headers["upstash-message-id"]


def test_rotation_keeps_receivers_with_the_old_pair_working(qstash: QStash, destination) -> None:
    before = qstash.signing_key.get()
    after = qstash.signing_key.rotate()
    assert after.current == before.next and after.next not in (before.current, before.next)
    assert qstash.signing_key.get() == after
    old_pair = Receiver(current_signing_key=before.current, next_signing_key=before.next)
    only_old_current = Receiver(current_signing_key=before.current, next_signing_key=before.current)
    for a in deliver(qstash, destination, f"{RUN}-b", 3):
        signature = a.headers["upstash-signature"]
        old_pair.verify(signature=signature, body=a.body.decode())
        with pytest.raises(SignatureError):
            only_old_current.verify(signature=signature, body=a.body.decode())
