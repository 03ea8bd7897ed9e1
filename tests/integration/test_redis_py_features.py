"""redis-py against pykv: transactions (pipelines, WATCH), pub/sub and keyspace events."""
from __future__ import annotations

import threading
import time

import pytest
import redis


@pytest.fixture
def r(pykv_proc):
    client = redis.Redis(port=pykv_proc.port)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def r3(pykv_proc):
    client = redis.Redis(port=pykv_proc.port, protocol=3)
    yield client
    client.close()


def test_transaction_pipeline(r):
    with r.pipeline() as pipe:  # transaction=True by default
        pipe.set("a", "1").incr("a").get("a")
        assert pipe.execute() == [True, 2, b"2"]


def test_pipeline_runtime_error_does_not_roll_back(r):
    r.set("s", "text")
    with r.pipeline() as pipe:
        pipe.set("a", "1").incr("s").incr("a")
        results = pipe.execute(raise_on_error=False)
    assert results[0] is True and results[2] == 2
    assert isinstance(results[1], redis.ResponseError)
    assert r.get("a") == b"2"


def test_pipeline_queue_error_aborts(r):
    with r.pipeline() as pipe:
        pipe.set("a", "1")
        pipe.execute_command("SET", "only-key")  # arity error at queue time
        with pytest.raises(redis.ResponseError):
            pipe.execute()
    assert r.get("a") is None


def test_watch_retry_loop(r, pykv_proc):
    """The optimistic-locking recipe: a concurrent change makes the first attempt retry."""
    r.set("counter", 0)
    other = redis.Redis(port=pykv_proc.port)
    attempts = 0
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch("counter")
                value = int(pipe.get("counter"))
                attempts += 1
                if attempts == 1:
                    other.incr("counter")  # somebody else gets in first
                pipe.multi()
                pipe.set("counter", value + 10)
                pipe.execute()
                break
            except redis.WatchError:
                continue
    other.close()
    assert attempts == 2
    assert r.get("counter") == b"11"


def test_transaction_helper(r):
    r.set("x", 5)

    def double(pipe):
        value = int(pipe.get("x"))
        pipe.multi()
        pipe.set("x", value * 2)

    r.transaction(double, "x")
    assert r.get("x") == b"10"


def test_pubsub_messages(r, pykv_proc):
    p = r.pubsub()
    p.subscribe("news")
    p.psubscribe("n*")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    assert p.get_message(timeout=2)["type"] == "psubscribe"
    publisher = redis.Redis(port=pykv_proc.port)
    assert publisher.publish("news", "hello") == 2
    got = [p.get_message(timeout=2) for _ in range(2)]
    assert {m["type"] for m in got} == {"message", "pmessage"}
    assert all(m["data"] == b"hello" for m in got)
    assert publisher.pubsub_numsub("news") == [(b"news", 1)]
    assert publisher.pubsub_numpat() == 1
    assert publisher.pubsub_channels() == [b"news"]
    p.unsubscribe()
    p.punsubscribe()
    p.close()
    publisher.close()


def test_pubsub_thread_handler(r, pykv_proc):
    received: list[bytes] = []
    done = threading.Event()

    def handler(message):
        received.append(message["data"])
        if len(received) == 3:
            done.set()

    p = r.pubsub()
    p.subscribe(**{"jobs": handler})
    worker = p.run_in_thread(sleep_time=0.01)
    try:
        deadline = time.monotonic() + 5
        while r.pubsub_numsub("jobs")[0][1] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(3):
            r.publish("jobs", f"job{i}")
        assert done.wait(5)
    finally:
        worker.stop()
        worker.join(5)
        p.close()
    assert received == [b"job0", b"job1", b"job2"]


def test_resp3_pubsub_with_commands(r3, pykv_proc):
    p = r3.pubsub()
    p.subscribe("c3")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    r3.publish("c3", "m")
    msg = p.get_message(timeout=2)
    assert msg["type"] == "message" and msg["data"] == b"m"
    p.close()


def test_keyspace_events_with_redis_py(r, pykv_proc):
    r.config_set("notify-keyspace-events", "KEA")
    try:
        assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
        p = r.pubsub()
        p.psubscribe("__keyspace@0__:*")
        assert p.get_message(timeout=2)["type"] == "psubscribe"
        r.set("watched", "1")
        r.expire("watched", 100)
        msgs = [p.get_message(timeout=2) for _ in range(2)]
        assert [m["data"] for m in msgs] == [b"set", b"expire"]
        assert msgs[0]["channel"] == b"__keyspace@0__:watched"
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")
