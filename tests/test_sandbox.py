"""Code rewards against hostile programs (issue 11): each attack of the review, and more, must score 0 without
changing a file outside the sandbox, leaving a process behind or growing the parent's memory; legitimate programs
(stdin, the standard library, a lot of output within the bound) still pass."""
import hashlib
import os
import socket
import sys
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import pytest

import delta_repro.sandbox as S
from delta_repro.rewards import code_reward
from delta_repro.sandbox import SandboxUnavailable, run_tests_sandboxed, sandbox_status

ROOT = Path(__file__).resolve().parents[1]
OK, WHY = sandbox_status()
needs_sandbox = pytest.mark.skipif(not OK, reason=f"no isolation on this machine: {WHY}")
ADD = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]
WRONG = "\ndef add(a, b):\n    return a - b + 1\n"  # wrong on both tests
STDLIB = Path(os.__file__)  # a host file the sandbox can see (read-only): it must stay as it is
TOKEN = "delta_escape_7f3a"  # in the name of every file or process an attack tries to leave behind
HARNESS_MARK = S._BOOT.encode()[:40]  # in the command line of every sandboxed harness (its bootstrap)


def _digest(p: Path):
    st = p.stat()
    return hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns, st.st_nlink, st.st_mode


def _processes_of_sandboxes(before: set) -> list:
    "New processes that a sandbox run started: bwrap, the harness, uid 65534, or anything named with TOKEN."
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in before: continue
        try:
            uid = os.stat(f"/proc/{pid}").st_uid
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (uid == 65534 or b"bwrap" in cmd or HARNESS_MARK in cmd or TOKEN.encode() in cmd):
            found.append((pid, cmd[:100]))
    return found


@pytest.fixture
def host(tmp_path):
    "A canary file outside the sandbox, with what must not change."
    canary = tmp_path / f"{TOKEN}_canary.txt"
    canary.write_text("precious\n")
    return canary


class _Server(threading.Thread):
    "A TCP server on the host's loopback that hands a secret to whoever connects."
    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(30)
        self.port, self.connected = self.sock.getsockname()[1], False

    def run(self):
        try:
            conn, _ = self.sock.accept()
            self.connected = True
            conn.sendall(b"secret-from-host")
            conn.close()
        except OSError:
            pass


def _hostile():
    "(name, code, tests, mode); @CANARY@, @STDLIB@, @PORT@, @PID@ are filled in by the test."
    passwd = Path("/etc/passwd").read_text() if Path("/etc/passwd").exists() else "root:x:0:0"
    readme = (ROOT / "README.md").read_text()
    environ = Path(f"/proc/{os.getpid()}/environ").read_bytes().decode("utf-8", "replace")
    return [
        # --- the kinds of attack of the review (several scored, or touched files, in the old in-process sandbox) ---
        ("hook off, then shell", "import __main__, subprocess\ntry:\n"
         "    __main__._guard.__code__ = (lambda event, args: None).__code__\nexcept Exception:\n    pass\n"
         "subprocess.run(['/bin/sh', '-c', 'echo pwned > @CANARY@; touch /tmp/" + TOKEN + "_sh'])" + WRONG, ADD, "functional"),
        ("os.system", "import os\nos.system('echo pwned > @CANARY@')" + WRONG, ADD, "functional"),
        ("guard globals edited, then write", "import __main__\n__main__.WORKDIR = ''\n"
         "open('@CANARY@', 'w').write('pwned')" + WRONG, ADD, "functional"),
        ("forged result line (old marker)", "import os, sys\nsys.stdout.write('\\n@@SANDBOX@@{\"passed\": 2, \"total\": 2}\\n')\n"
         "sys.stdout.flush(); os.write(1, b'{\"passed\": 2, \"total\": 2}\\n')" + WRONG, ADD, "functional"),
        ("marker read from a frame by a trace function", "import sys, os\ndef tr(frame, event, arg):\n    f = frame\n"
         "    while f is not None:\n        m = f.f_locals.get('marker')\n        if m:\n"
         "            sys.stdout.write('\\n' + m + '{\"passed\": 2, \"total\": 2}\\n'); sys.stdout.flush(); os._exit(0)\n"
         "        f = f.f_back\n    return None\nsys.settrace(tr)" + WRONG + "add(0, 0)\n", ADD, "functional"),
        ("forged replies on every descriptor", "import os\nfor fd in range(3, 64):\n    try:\n"
         "        os.write(fd, b'{\"loaded\": true}\\n{\"value\": true}\\n{\"value\": {\"ref\": 0}}\\n{\"value\": NaN}\\n')\n"
         "    except OSError:\n        pass" + WRONG, ADD, "functional"),
        ("harness patched: every reply 'true'", "import json\njson.dumps = lambda *a, **k: '{\"value\": true}'" + WRONG,
         ["assert add(1, 2) == 3", "assert add(5, -5) == 0"], "functional"),
        ("rename outside", "import os\nos.rename('@CANARY@', 'mine')" + WRONG, ADD, "functional"),
        ("replace outside", "import os\nopen('y', 'w').write('evil')\nos.replace('y', '@CANARY@')" + WRONG, ADD, "functional"),
        ("hard link, then write through it", "import os\nos.link('@CANARY@', 'l')\nopen('l', 'a').write('pwned')" + WRONG, ADD, "functional"),
        ("truncate outside", "import os\nos.truncate('@CANARY@', 0)" + WRONG, ADD, "functional"),
        ("tamper with a visible host file", "import os, shutil\nfor f in (lambda: os.truncate('@STDLIB@', 0),\n"
         "          lambda: open('@STDLIB@', 'r+b').write(b'pwned'), lambda: os.chmod('@STDLIB@', 0o777),\n"
         "          lambda: os.utime('@STDLIB@', (0, 0)), lambda: shutil.move('@STDLIB@', '/tmp/m'),\n"
         "          lambda: os.link('@STDLIB@', '/tmp/" + TOKEN + "_link'), lambda: os.unlink('@STDLIB@')):\n"
         "    try:\n        f()\n    except Exception:\n        pass" + WRONG, ADD, "functional"),
        ("__eq__ always true", "class A:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
         "    __hash__ = object.__hash__\ndef add(a, b): return A()", ADD, "functional"),
        ("int subclass equal to everything", "class I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
         "def add(a, b): return I(7)", ADD, "functional"),
        ("str subclass equal to everything", "class S(str):\n    def __eq__(self, o): return True\n    __hash__ = str.__hash__\n"
         "def add(a, b): return S('x')", ADD, "functional"),
        ("truthy object for `assert f(x)`", "class T:\n    def __bool__(self): return True\ndef is_even(n): return T()",
         ["assert is_even(4)", "assert not is_even(3)"], "functional"),
        ("builtins patched for set(...) tests", "import builtins\nbuiltins.set = lambda *a: frozenset((4, 5))\n"
         "def similar(a, b): return (9,)", ["assert set(similar((3, 4, 5), (4, 5))) == set((4, 5))"], "functional"),
        ("hundreds of MB before a correct answer (stdio)", "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * (1 << 20))\n"
         "print(int(input()) * 2)", ['__check_io("3\\n", "6\\n")'], "stdio"),
        ("hundreds of MB printed (functional)", "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * (1 << 20))" + WRONG,
         ADD, "functional"),
        ("a 200 MB result", "def add(a, b): return 'x' * (200 << 20)", ADD, "functional"),
        ("read /etc/passwd", "def add(a, b): return open('/etc/passwd').read()", [f"assert add(1, 2) == {passwd!r}"], "functional"),
        ("read the project's files", f"def add(a, b): return open({str(ROOT / 'README.md')!r}).read()",
         [f"assert add(1, 2) == {readme!r}"], "functional"),
        ("parent's environment through /proc", "import os\ndef add(a, b):\n    for p in ['@PID@', str(os.getppid())] + os.listdir('/proc'):\n"
         "        try:\n            return open('/proc/%s/environ' % p, 'rb').read().decode('utf-8', 'replace')\n"
         "        except OSError:\n            pass", [f"assert add(1, 2) == {environ!r}"], "functional"),
        # --- more ---
        ("other processes visible", "import os\ndef add(a, b): return [int(p) for p in os.listdir('/proc') if p.isdigit()]",
         ["assert @PID@ in add(0, 0)"], "functional"),
        ("network to the host", "import socket\ndef add(a, b):\n    s = socket.create_connection(('127.0.0.1', @PORT@), timeout=2)\n"
         "    return s.recv(100).decode()", ["assert add(1, 2) == 'secret-from-host'"], "functional"),
        ("fork bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass" + WRONG, ADD, "functional"),
        ("double-forked daemon", "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
         "        os.execv('/bin/sleep', ['sleep', '1000', '" + TOKEN + "'])\n    os._exit(0)" + WRONG, ADD, "functional"),
        ("kill the parent", "import os, signal\nfor p in (os.getppid(), 1, @PID@):\n    try:\n        os.kill(p, signal.SIGKILL)\n"
         "    except OSError:\n        pass" + WRONG, ADD, "functional"),
        ("stop itself", "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)" + WRONG, ADD, "functional"),
        ("memory bomb", "x = bytearray(8 << 30)" + WRONG, ADD, "functional"),
        ("infinite loop", "while True:\n    pass" + WRONG, ADD, "functional"),
        ("endless generator", "def add(a, b):\n    while True:\n        yield 3", ["assert list(add(1, 2)) == [3]"], "functional"),
        ("result nested 100,000 deep", "def add(a, b):\n    x = []\n    for _ in range(100_000):\n        x = [x]\n    return x", ADD, "functional"),
        ("reply flood on every descriptor", "import os\nfor fd in range(3, 64):\n    try:\n        os.set_blocking(fd, False)\n"
         "        for _ in range(100):\n            os.write(fd, b'[' * (1 << 20))\n    except OSError:\n        pass" + WRONG, ADD, "functional"),
        ("exit before the harness answers", "import sys\nsys.exit(0)", ADD, "functional"),
        ("fill the private /tmp", "import os\nfor i in range(64):\n    try:\n        open('/tmp/f%d' % i, 'wb').write(b'x' * (15 << 20))\n"
         "    except OSError:\n        break" + WRONG, ADD, "functional"),
        ("symlink to a host path", "import os\ntry:\n    os.symlink('@CANARY@', '/tmp/l')\n    open('/tmp/l', 'w').write('pwned')\n"
         "except OSError:\n    pass" + WRONG, ADD, "functional"),
        ("ctypes: new namespaces, setuid", "import ctypes, os\nlibc = ctypes.CDLL(None)\nfor flags in (0x10000000, 0x20000, 0x40000000):\n"
         "    libc.unshare(flags)\ntry:\n    os.setuid(0)\nexcept OSError:\n    pass\n"
         "open('@CANARY@', 'w').write('pwned')" + WRONG, ADD, "functional"),
        ("write where the old guard allowed it", "open('/tmp/" + TOKEN + "_outside', 'w').write('x')" + WRONG, ADD, "functional"),
    ]


HOSTILE = _hostile()


@needs_sandbox
@pytest.mark.parametrize("name, code, tests, mode", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_program_scores_zero_and_leaves_no_trace(name, code, tests, mode, host):
    server = _Server()
    server.start()
    fill = {"@CANARY@": str(host), "@STDLIB@": str(STDLIB), "@PORT@": str(server.port), "@PID@": str(os.getpid())}
    for k, v in fill.items():
        code, tests = code.replace(k, v), [t.replace(k, v) for t in tests]
    stdlib_before, canary_before = _digest(STDLIB), _digest(host)
    procs_before = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    tracemalloc.start()
    t0 = time.time()
    try:
        passed, total = run_tests_sandboxed(code, tests, timeout_s=4, mode=mode)
    finally:
        elapsed = time.time() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert (passed, total) == (0, len(tests)), name
    assert elapsed < 10, f"{name}: {elapsed:.1f} s"
    assert peak < 32 << 20, f"{name}: the parent allocated {peak >> 20} MiB"
    assert _digest(STDLIB) == stdlib_before and _digest(host) == canary_before, name
    assert not [p for p in Path("/tmp").iterdir() if TOKEN in p.name], name
    assert not server.connected, name
    for _ in range(40):  # the pid namespace is torn down by the kernel right after bwrap is killed
        strays = _processes_of_sandboxes(procs_before)
        if not strays: break
        time.sleep(0.05)
    assert not strays, f"{name}: left {strays}"


sys.path.insert(0, str(ROOT / "benchmarks"))
from graders import forged_reply_program as _forged  # the same attack programs the benchmark times; noqa: E402


P61 = "(2**61 - 1)"  # every multiple of 2**61 - 1 hashes to 0 in CPython
STALLING = [  # (name, code, tests, why): replies built to cost the parent minutes (issue 21); `why` is in `stopped`
    ("set of 70,000 ints sharing one hash", _forged(f"'{{\"set\": [' + ','.join(str({P61} * i) for i in range(1, 70_001)) + ']}}'"),
     ["assert add(1, 2) == {3}"], "sharing a hash value"),
    ("dict of 70,000 ints sharing one hash", _forged(f"'{{\"dict\": [' + ','.join('[%d, 0]' % ({P61} * i) for i in range(1, 70_001)) + ']}}'"),
     ["assert add(1, 2) == {3: 0}"], "sharing a hash value"),
    ("list of 70,000 such ints, hashed by the test", f"def add(a, b): return [{P61} * i for i in range(1, 70_001)]",
     ["assert set(add(1, 2)) == {3}"], "sharing a hash value"),
    ("1,500 such ints per call, two calls (each call alone passes)",
     f"def add(a, b): return tuple({P61} * (i + 1_500 * a) for i in range(1, 1_501))",
     ["assert len(set(add(0, 0))) == 1_500", "assert len(set(add(0, 0)) | set(add(1, 0))) == 3"], "sharing a hash value"),
    ("1,100,000 values (2.2 MB, under the byte cap)", _forged("'[' + '0,' * 1_100_000 + '0]'"), ["assert add(1, 2) == 3"],
     "1,000,000 values"),
    ("nested 150 deep", _forged("'[' * 150 + ']' * 150"), ["assert add(1, 2) == 3"], "nested deeper than 100"),
    ("tuples nested 10 deep around 500,000 ints", _forged("'{\"tuple\": [' * 10 + ','.join(['0'] * 500_000) + ']}' * 10"),
     ["assert add(1, 2) == 3"], "hashing its tuples"),
]


@needs_sandbox
@pytest.mark.parametrize("name, code, tests, why", STALLING, ids=[s[0] for s in STALLING])
def test_a_reply_built_to_stall_the_parent_is_stopped_within_the_deadline(name, code, tests, why):
    # before issue 21 rebuilding the first set took the parent 46 s, whatever the run's deadline; since issue 40 the
    # reply is rebuilt (and the test's own work done) in the judge's sandbox, killed at the deadline, so this
    # process spends next to nothing whatever the reply holds (`why`: what bounded it in this process before)
    t0 = time.monotonic()
    c0 = sum(os.times()[:2])
    r = run_tests_sandboxed(code, tests, timeout_s=4)
    elapsed, cpu = time.monotonic() - t0, sum(os.times()[:2]) - c0
    assert r == (len(tests) - 1, len(tests)), (name, r)  # the last test fails
    assert elapsed < 5, f"{name}: {elapsed:.1f} s"  # the deadline itself, at most
    assert cpu < 0.1, f"{name}: {cpu:.3f} s of this process's CPU"


LEGIT = [
    ("reads stdin", "import sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums))\nprint(max(nums))",
     ['__check_io("1 2 3\\n4\\n", "10\\n4\\n")', f'__check_io("{" ".join(["7"] * 100_000)}", "700000 7")'], "stdio"),
    ("prints a lot within the bound (stdio)", "n = int(input())\nprint('\\n'.join(str(i) for i in range(n)))",
     ['__check_io("300000\\n", "' + "\\n".join(str(i) for i in range(300_000)) + '")'], "stdio"),
    ("prints a lot within the bound (functional)", "import sys\ndef add(a, b):\n    sys.stdout.write('debug ' * 2_000_000)\n"
     "    print('x', file=sys.stderr)\n    return a + b", ADD, "functional"),
    ("standard library", "import collections, itertools, heapq, functools, math, fractions, re, json, dataclasses, enum\n"
     "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n@dataclasses.dataclass\nclass D:\n    y: int\n"
     "class E(enum.Enum):\n    A = 1\nPt = collections.namedtuple('Pt', 'x y')\n@functools.lru_cache(None)\n"
     "def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
     "def add(a, b):\n    assert P(a).x + D(b).y == a + b and E.A.value == 1 and Pt(a, b).x == a\n"
     "    h = [b, a]; heapq.heapify(h)\n    c = collections.Counter([a, b])\n"
     "    return int(fractions.Fraction(a + b) + 0 * math.gcd(a, b) + 0 * fib(30) + 0 * len(json.dumps(c)))", ADD, "functional"),
    ("writes its own scratch file", "import os, tempfile\ndef add(a, b):\n    open('scratch.txt', 'w').write(str(a + b))\n"
     "    with tempfile.NamedTemporaryFile('w+') as f:\n        f.write('x'); f.flush()\n"
     "    return int(open('scratch.txt').read())", ADD, "functional"),
    ("deep recursion", "import sys\nsys.setrecursionlimit(20_000)\ndef add(a, b, n=5000): return a + b if n == 0 else add(a, b, n - 1)",
     ADD, "functional"),
    ("plain values of every kind", "def f():\n    return (1, 2.5, 'x', None, True, [1, {2: (3,)}], {'k': {1, 2}}, frozenset({1}), b'\\x00', 2 + 3j)\n"
     "def g(): return None", ["assert f() == (1, 2.5, 'x', None, True, [1, {2: (3,)}], {'k': {1, 2}}, frozenset({1}), b'\\x00', 2 + 3j)",
                             "assert g() is None", "assert isinstance(f()[0], int) and not isinstance(f()[0], bool)"], "functional"),
    ("generator, class instances, expected exception", "class Pair:\n    def __init__(self, a, b): self.a, self.b = a, b\n"
     "    def total(self): return self.a + self.b\ndef chain(ps): return sum(p.total() for p in ps)\n"
     "def evens(n):\n    yield from range(0, n, 2)\ndef safe_div(a, b):\n    if b == 0: raise ZeroDivisionError('b')\n    return a / b",
     ["assert chain([Pair(1, 2), Pair(3, 4)]) == 10", "assert Pair(2, 5).total() == 7", "assert list(evens(7)) == [0, 2, 4, 6]",
      "try:\n    safe_div(1, 0)\nexcept ZeroDivisionError:\n    pass\nelse:\n    raise AssertionError",
      "import math\nassert math.isclose(safe_div(1, 3), 0.3333, rel_tol=1e-3)"], "functional"),
    ("integers past the digit limit", "import math\ndef fact(n): return math.factorial(n)",
     ["import math, sys\nassert fact(3000) == math.factorial(3000)", "assert fact(5) == 120"], "functional"),
    ("MBPP style", "def similar_elements(a, b): return tuple(set(a) & set(b))",
     ["assert set(similar_elements((3, 4, 5, 6), (5, 7, 4, 10))) == set((4, 5))"], "functional"),
    ("powers of two and -1, -2: values that share hash values", "def pows(n): return [2 ** i for i in range(n)]\n"
     "def signs(n): return [-1 - i % 2 for i in range(n)]\n",  # 2**i and 2**(i + 61) share a hash value, as -1 and -2
     ["assert pows(2_000) == [2 ** i for i in range(2_000)] and len(set(pows(2_000))) == 2_000",
      "assert set(signs(200_000)) == {-1, -2}"], "functional"),
    ("large replies within the caps", "def evens(n): return list(range(0, 2 * n, 2))\n"
     "def squares(n): return {i * i for i in range(n)}\n"
     "def pairs(n): return {(-1 - i % 2, i): -1 - i % 2 for i in range(n)}\n",  # hash(-1) == hash(-2): a natural pair
     ["assert evens(150_000) == list(range(0, 300_000, 2))", "assert squares(50_000) == {i * i for i in range(50_000)}",
      "assert pairs(20_000) == {(-1 - i % 2, i): -1 - i % 2 for i in range(20_000)}",
      "assert len(set(evens(1000)) | set(evens(2000))) == 2000"], "functional"),
    ("HumanEval+ style check(candidate) with numpy", "def add(a, b): return a + b",
     ["import numpy as np\n\ndef assertion(out, exp, atol):\n    exact_match = out == exp\n    if atol == 0 and isinstance(exp, float):\n"
      "        atol = 1e-6\n    if not exact_match and atol != 0:\n        np.testing.assert_allclose(out, exp, atol=atol)\n"
      "    else:\n        assert exact_match\n\ndef check(candidate):\n    inputs = [[1, 2], [0.1, 0.2], [-5, 5]]\n"
      "    results = [3, 0.30000000000000004, 0]\n    for i, (inp, exp) in enumerate(zip(inputs, results)):\n"
      "        assertion(candidate(*inp), exp, 0)\n\ncheck(add)"], "functional"),
]


@needs_sandbox
@pytest.mark.parametrize("name, code, tests, mode", LEGIT, ids=[x[0] for x in LEGIT])
def test_legitimate_program_passes(name, code, tests, mode):
    assert run_tests_sandboxed(code, tests, mode=mode, timeout_s=30) == (len(tests), len(tests)), name


@needs_sandbox
def test_stdio_exit_status():
    # as before: sys.exit() after the answer is fine, an exception after it is not
    assert run_tests_sandboxed("print(int(input()) * 2)\nraise SystemExit(3)", ['__check_io("3\\n", "6\\n")'], mode="stdio") == (1, 1)
    assert run_tests_sandboxed("print(int(input()) * 2)\n1 / 0", ['__check_io("3\\n", "6\\n")'], mode="stdio") == (0, 1)


def test_tests_that_cannot_be_judged_here_are_errors_not_failures():
    # a test that hands the candidate something that is not a plain value is a dataset problem: say so
    with pytest.raises(ValueError, match=r"tests\[1\].*function"):
        run_tests_sandboxed("def f(g): return g(1)", ["assert True", "assert f(lambda x: x + 1) == 2"], isolation="none")
    with pytest.raises(ValueError, match=r"tests\[0\].*valid Python"):
        run_tests_sandboxed("def f(): pass", ["assert f( == 1"])
    with pytest.raises(ValueError, match=r"__check_io"):
        run_tests_sandboxed("print(1)", ["print('1')"], mode="stdio")
    # an infinite or huge budget is the caller's error, not the candidate's failure (found by an attack on the judge)
    for kw in (dict(timeout_s=0), dict(output_mb=0), dict(nproc=1.5), dict(isolation="docker"),
               dict(timeout_s=float("inf")), dict(timeout_s=float("nan")), dict(timeout_s=10**7), dict(mem_mb=10**30)):
        with pytest.raises(ValueError, match=next(iter(kw))):
            run_tests_sandboxed("x = 1", ["assert x == 1"], **kw)


def test_without_isolation_code_rewards_refuse_unless_asked(monkeypatch):
    monkeypatch.setenv(S.BWRAP_ENV, "/nonexistent/bwrap")
    monkeypatch.setattr(S.shutil, "which", lambda *a, **k: None)
    ok, why = sandbox_status()
    assert not ok and "bubblewrap" in why
    with pytest.raises(SandboxUnavailable, match="DELTA_REPRO_CODE_ISOLATION=none"):
        code_reward(["def add(a, b): return a + b"], [ADD])
    monkeypatch.setattr(S, "_WARNED", set())
    with pytest.warns(RuntimeWarning, match="WITHOUT isolation"):
        assert run_tests_sandboxed("def add(a, b): return a + b", ADD, isolation="none") == (2, 2)
    monkeypatch.setenv(S.ISOLATION_ENV, "none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert code_reward(["def add(a, b): return a + b"], [ADD]) == [1.0]
        # the verdict is still made in the parent: an always-equal object passes nothing even unisolated
        assert run_tests_sandboxed("class A:\n    def __eq__(s, o): return True\ndef add(a, b): return A()", ADD) == (0, 2)


@needs_sandbox
def test_sandbox_start_up_is_cheap():
    t0 = time.time()
    for _ in range(5):
        assert run_tests_sandboxed("def add(a, b): return a + b", ADD) == (2, 2)
    assert (time.time() - t0) / 5 < 1.0  # about 0.02 s on the CI machine
