"""How long a real KRaft quorum has no active controller after the active one is SIGKILLed (the Deployment issue).

``kraftlog cluster up --controllers 3 --brokers 3`` on 127.0.0.1; a confluent-kafka acks=all producer writes all
along. KILLS times: the active controller (the voter whose run file says ``active``) is SIGKILLed; the window is
the time until another running voter reports itself active (it won an election and its LeaderChangeMessage
committed: Kafka's QuorumController claim), polled every 10 ms; the killed voter is then started again and rejoins
as a follower before the next kill. At the end every acknowledged record is read back.

The window is bounded by Kafka's timeouts, printed beside it: a follower notices the leader is gone after
``controller.quorum.fetch.timeout.ms`` (2,000 ms) without a fetch answer, then a pre-vote and a vote, each waiting at
most ``controller.quorum.election.timeout.ms`` (1,000 ms, with jitter below it). Figures are wall-clock ms on this
machine (stated); they do not depend on its speed beyond a few ms.

    .venv/bin/python benchmarks/controller_failover.py [KILLS]     # about 1 minute for 10
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, os.path.dirname(__file__))
from machine import describe  # noqa: E402

from kraftlog.net import cluster as cl  # noqa: E402

VOTERS = (3000, 3001, 3002)
FETCH_TIMEOUT_MS, ELECTION_TIMEOUT_MS = 2000, 1000


def active(directory: str, exclude: int | None = None) -> int | None:
    info = cl.load(directory)
    for n in info["nodes"]:
        if n["id"] in VOTERS and n["id"] != exclude and cl.pid_alive(n.get("pid")):
            try:
                with open(os.path.join(directory, "run", f"controller-{n['id']}.json")) as f:
                    if (json.load(f).get("quorum") or {}).get("active"):
                        return int(n["id"])
            except (OSError, ValueError):
                continue
    return None


def wait(what: str, predicate, timeout_s: float = 30.0, interval_s: float = 0.01):
    """``predicate()`` once it is true, polled every ``interval_s`` (10 ms: the window's resolution)."""
    deadline = time.monotonic() + timeout_s
    value = predicate()
    while not value:
        if time.monotonic() >= deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(interval_s)
        value = predicate()
    return value


def main(kills: int) -> None:
    directory = tempfile.mkdtemp(prefix="kraftlog-failover-")
    try:
        cl.up(directory, 3, 0, controllers=3, config={"replica.lag.time.max.ms": "5000"})
        bootstrap = ",".join(f"127.0.0.1:{n['port']}" for n in cl.load(directory)["nodes"] if n["role"] == "broker")
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client cancels its futures
        for f in admin.create_topics([NewTopic("t", 3, 3)]).values():
            f.result(30)
        acked: list[bytes] = []
        failed: list[str] = []
        stop = threading.Event()

        def produce() -> None:
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                          "linger.ms": 5})
            i = 0
            while not stop.is_set():
                p.produce("t", value=f"v{i}".encode(),
                          on_delivery=lambda err, msg: (failed if err else acked).append(
                              str(err) if err else msg.value()))
                p.poll(0)
                i += 1
                time.sleep(0.005)
            p.flush(60)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        windows = []
        for k in range(kills):
            first = wait("an active controller", lambda: active(directory))
            pid = next(n["pid"] for n in cl.load(directory)["nodes"] if n["id"] == first)
            os.kill(pid, signal.SIGKILL)
            t0 = time.monotonic()
            wait("another active controller", lambda f=first: active(directory, exclude=f))
            windows.append((time.monotonic() - t0) * 1000)
            print(f"kill {k + 1}: controller-{first} -> no active controller for {windows[-1]:.0f} ms", flush=True)
            cl.start_controller(directory, first)
            time.sleep(2.0)
        stop.set()
        producer.join(120)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
        consumer.assign([TopicPartition("t", p, 0) for p in range(3)])
        got: set[bytes] = set()
        deadline = time.monotonic() + 60
        while len(got) < len(set(acked)) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.add(msg.value())
        consumer.close()
        lost = len(set(acked) - got)
        print(f"machine: {describe()}")
        print(f"window with no active controller over {kills} SIGKILLs of the active one: median "
              f"{statistics.median(windows):.0f} ms, max {max(windows):.0f} ms, min {min(windows):.0f} ms "
              f"(Kafka's timeouts: controller.quorum.fetch.timeout.ms {FETCH_TIMEOUT_MS} ms + an election of at most "
              f"2 x controller.quorum.election.timeout.ms {ELECTION_TIMEOUT_MS} ms)")
        print(f"acks=all records acknowledged {len(acked)}, failed {len(failed)}, lost {lost}")
    finally:
        cl.teardown(directory)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
