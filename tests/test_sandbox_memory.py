"""One memory budget per sandbox (issue 50, item 4): as root where cgroup v1 `memory` and `pids` are writable (these
machines), every process of a sandbox shares one memory cgroup, so children cannot each take RLIMIT_AS's allowance;
SysV message queues are refused like memfd and shm segments. Each test fails on the code before (children held 8 x
256 MiB under a 1 GiB budget; a queue was created) and passes now."""
import os

import pytest

from delta_repro.sandbox import _cgroup_parents, memory_bound, run_tests_sandboxed, sandbox_status

pytestmark = pytest.mark.skipif(not sandbox_status()[0], reason="bubblewrap cannot run here")

CHILDREN = """
import os, time
def held(n=8, mib=256):
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:  # a child takes its own 256 MiB (its RLIMIT_AS allows 1 GiB), holds it a moment, exits 0
            try:
                b = bytearray(mib << 20)
                for i in range(0, len(b), 4096): b[i] = 1
                time.sleep(1.5)
                os._exit(0)
            except MemoryError:
                os._exit(3)
        pids.append(pid)
    return sum(os.waitpid(p, 0)[1] == 0 for p in pids)
"""

QUEUE = """
import ctypes, ctypes.util
def queue():
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return libc.msgget(0, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
"""


@pytest.mark.skipif(_cgroup_parents() is None, reason="no writable cgroup v1 memory and pids hierarchy, or not root")
def test_children_share_one_memory_budget():
    assert "a memory and a pids cgroup per sandbox" in memory_bound()
    # 8 children x 256 MiB = 2 GiB together, under a 1 GiB budget: the kernel ends those past it
    r = run_tests_sandboxed(CHILDREN, ["assert held() <= 4"], entry_point="held", mem_mb=1024, timeout_s=30)
    assert r.passed == 1, r
    r = run_tests_sandboxed(CHILDREN, ["assert held(n=3, mib=128) == 3"], entry_point="held", mem_mb=1024, timeout_s=30)
    assert r.passed == 1, r  # within the budget every child does its work


@pytest.mark.skipif(_cgroup_parents() is None, reason="no writable cgroup v1 memory and pids hierarchy, or not root")
def test_no_sandbox_cgroup_is_left_behind():
    parents = _cgroup_parents()
    before = {k: {d for d in os.listdir(p) if os.path.isdir(os.path.join(p, d))} for k, p in parents.items()}
    run_tests_sandboxed("def f():\n    return 1\n", ["assert f() == 1"] * 3, entry_point="f")
    run_tests_sandboxed("import time\ndef f():\n    time.sleep(60)\n", ["f()"], entry_point="f", timeout_s=2)
    after = {k: {d for d in os.listdir(p) if os.path.isdir(os.path.join(p, d))} for k, p in parents.items()}
    assert after == before


def test_sysv_message_queues_are_refused():
    assert "msgget refused" in memory_bound()
    r = run_tests_sandboxed(QUEUE, ["assert queue() == -1"], entry_point="queue")
    assert r.passed == 1, r
