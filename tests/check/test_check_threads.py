"""attention_src.check called from a thread other than the main one (a test runner's or a
web server's worker), where SIGALRM cannot interrupt the reader's code: the time limit per
call still holds (the call runs in a worker thread, and the checker stops waiting for it)."""

from __future__ import annotations

import threading
import time

from attention_src.check import UsageError, check_function
from attention_src.check.running import call_quietly


def _hangs(q, k, v, mask=None):
    while True:
        time.sleep(0.01)


def test_time_limit_holds_outside_the_main_thread():
    done = {}

    def job():
        start = time.perf_counter()
        try:
            check_function(_hangs, device="cpu", call_limit=0.5)
        except UsageError as error:
            done["error"] = str(error)
        done["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=job, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the check hung in a thread"
    assert "did not return within 0.5 s" in done["error"]
    assert done["seconds"] < 30


def test_a_call_in_a_thread_returns_and_raises_as_in_the_main_thread():
    out = {}

    def job():
        out["ok"] = call_quietly(lambda a: a + 1, [1], limit=5)
        out["raises"] = call_quietly(lambda: 1 / 0, [], limit=5)

    worker = threading.Thread(target=job)
    worker.start()
    worker.join(30)
    assert out["ok"] == (2, None)
    assert out["raises"] == (None, "ZeroDivisionError: division by zero")
