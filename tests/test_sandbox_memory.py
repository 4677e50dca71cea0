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


NAMESPACES = """
import ctypes, ctypes.util, os, platform, signal, subprocess, sys, threading
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
NR_CLONE = {"x86_64": 56, "aarch64": 220}[platform.machine()]
def tmpfs():  # a user and mount namespace of its own, then a tmpfs there (1.5 GiB held so before)
    if libc.unshare(0x10000000 | 0x00020000) != 0: return ("unshare", ctypes.get_errno())
    os.makedirs("/tmp/m", exist_ok=True)
    return ("mount", libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, b"size=1g"), ctypes.get_errno())
def clone_new_user():  # the raw clone call with CLONE_NEWUSER: refused before a child exists
    pid = libc.syscall(NR_CLONE, 0x10000000 | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0: os._exit(0)
    if pid > 0: os.waitpid(pid, 0); return "cloned"
    return ("clone", ctypes.get_errno())
def ordinary():  # what a program may still do: threads, fork, a subprocess
    out = []
    t = threading.Thread(target=lambda: out.append(1)); t.start(); t.join()
    pid = os.fork()
    if pid == 0: os._exit(7)
    out.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    out.append(subprocess.run([sys.executable, "-I", "-S", "-c", "print(5)"], capture_output=True, text=True).stdout.strip())
    return out
"""


def test_a_namespace_of_its_own_and_a_tmpfs_are_refused():
    # as root bwrap's --disable-userns cannot apply (no user namespace is made); before the seccomp rules the program
    # unshared a user and mount namespace and mounted a tmpfs (the first test passed as ("mount", 0, 0))
    assert "unshare, setns, mount and a clone into a new namespace refused" in memory_bound()
    r = run_tests_sandboxed(NAMESPACES, ["assert tmpfs() == ('unshare', 1)"], entry_point="tmpfs")
    assert r.passed == 1, r  # EPERM
    r = run_tests_sandboxed(NAMESPACES, ["assert clone_new_user() == ('clone', 1)"], entry_point="clone_new_user")
    assert r.passed == 1, r
    # threads (clone3 answers ENOSYS, so the C library falls back to clone), fork and subprocesses still work
    r = run_tests_sandboxed(NAMESPACES, ["assert ordinary() == [1, 7, '5']"], entry_point="ordinary", timeout_s=30)
    assert r.passed == 1, r
