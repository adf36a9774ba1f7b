"""Python's rules: the GIL is released during every call and stream, one client serves many
threads and asyncio tasks at once, and dropping a client, cancelling a task or Ctrl-C ends the
call without a deadlock or a leaked socket, process or temp file."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from pydantic import BaseModel

import geode
from conftest import KEY, eventually, sockets_to


class Point(BaseModel):
    x: int
    y: int


SLOW = {"slow_body": {"delay_ms": 400, "then": {"json": {"x": 1, "y": 2}}}}


def test_threads_share_one_client_and_the_gil_is_released(fake):
    f, env = fake({"steps": [], "default": SLOW})
    client = geode.Client("openai-payg", env=env)
    results, finished = [], threading.Event()

    def call():
        results.append(client.extract(Point, "p").value)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    # Every call reaches the provider while the first is still waiting for its answer: the
    # calls run at once, so none holds the GIL while it waits.
    f.wait_requests(8)
    assert not results, "all eight were in flight together"
    spins = 0
    while any(t.is_alive() for t in threads):
        spins += 1  # the main thread keeps running Python meanwhile
    for t in threads:
        t.join()
    assert results == [Point(x=1, y=2)] * 8
    assert spins > 1000


def test_asyncio_tasks_share_one_client_without_a_thread_each(fake):
    f, env = fake({"steps": [], "default": SLOW})
    client = geode.Client("openai-payg", env=env)
    client.extract(Point, "warm up")  # the runtime's worker threads exist from here on

    async def main():
        before = threading.active_count()
        tasks = [asyncio.create_task(client.aextract(Point, f"p{i}")) for i in range(32)]
        await asyncio.sleep(0)
        seen = await asyncio.to_thread(f.wait_requests, 33)
        assert len(seen) >= 33 and not any(t.done() for t in tasks)
        during = threading.active_count()
        values = await asyncio.gather(*tasks)
        return before, during, values

    before, during, values = asyncio.run(main())
    assert values and all(v.value == Point(x=1, y=2) for v in values)
    # 32 calls in flight on the event loop; the one helper thread is the wait_requests above.
    assert during <= before + 1


def test_cancelling_a_task_cancels_its_call(fake):
    f, env = fake({"steps": [], "default": "hang"})
    client = geode.Client("openai-payg", env=env)

    async def main():
        task = asyncio.create_task(client.aextract(Point, "p"))
        await asyncio.to_thread(f.wait_requests, 1)
        assert sockets_to(f.port) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    eventually(lambda: sockets_to(f.port) == 0, what="the cancelled call's connection closed")


def test_dropped_clients_leave_no_socket_of_their_own(fake):
    # Connections live in one process-wide pool that every client shares (idle ones close after
    # 30 s): a client dropped after its calls leaves its connection for the next client to reuse.
    f, env = fake({"steps": [], "default": {"json": {"x": 1, "y": 2}}})
    for _ in range(20):
        client = geode.Client("openai-payg", env=env)
        assert client.extract(Point, "p").value == Point(x=1, y=2)
        del client
        gc.collect()
        assert sockets_to(f.port) <= 1
    assert len(f.model_requests()) == 20


def test_no_temp_file_is_left_behind(fake, tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    f, env = fake([{"json": {"x": 1, "y": 2}}, {"hang_mid_text": '{"x": 1, "y": 2}'}])
    client = geode.Client("openai-payg", env=env)
    client.extract(Point, "p")
    for _ in client.stream(Point, "p"):
        break
    del client
    gc.collect()
    assert list(tmp.iterdir()) == []


def test_ctrl_c_cancels_a_sync_call(fake, tmp_path):
    f, env = fake({"steps": [], "default": "hang"})
    script = tmp_path / "call.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import faulthandler, signal, sys, geode
            # Should it ever hang: where every thread was, in the failure's stderr.
            faulthandler.dump_traceback_later(20, exit=True)
            # Python leaves SIGINT ignored when it starts with it ignored (a test run started in
            # the background by a non-interactive shell): give it the handler a terminal's has.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            client = geode.Client("openai-payg", env={env!r})
            try:
                client.extract({{"type": "object"}}, "p")
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                sys.exit(7)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    f.wait_requests(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 7 and "interrupted" in out, err
    assert KEY not in out


def test_breaking_out_of_many_streams_leaves_nothing_running(fake):
    f, env = fake({"steps": [], "default": {"hang_mid_text": '{"x": 1, "y": 2}'}})
    client = geode.Client("openai-payg", env=env)
    threads_before = threading.active_count()
    for _ in range(20):
        for _ in client.stream(Point, "p"):
            break
    eventually(lambda: sockets_to(f.port) == 0, what="every abandoned stream's connection closed")
    assert threading.active_count() == threads_before
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        for _ in client.stream(Point, "p"):
            break
    eventually(lambda: sockets_to(f.port) == 0, what="the second round's connections closed")
    assert len(os.listdir("/proc/self/fd")) <= fds
