"""A process forked after a call (multiprocessing, gunicorn and Celery workers fork) still calls.

The tokio runtime of the parent does not survive a fork (its threads stay behind), so each
process makes its own on its first call; a client made in the child works there.
"""

from __future__ import annotations

import dataclasses
import os
import time

import geode


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_a_forked_child_calls_after_its_parent_did(fake):
    f, env = fake({"steps": [], "default": {"json": {"x": 4, "y": 2}}})
    assert geode.Client("openai-payg", env=env).extract(Point, "where?").value == Point(4, 2)
    pid = os.fork()
    if pid == 0:
        # The child: a fresh client, one call, and the exit code says whether it came back.
        try:
            got = geode.Client("openai-payg", env=env).extract(Point, "where?").value
            os._exit(0 if got == Point(4, 2) else 3)
        except BaseException:
            os._exit(4)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child's call never came back")
    assert len(f.model_requests()) == 2
    # The parent still calls after its child did.
    assert geode.Client("openai-payg", env=env).extract(Point, "where?").value == Point(4, 2)
