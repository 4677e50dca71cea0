"""Code rewards that no completion can forge or stall (issue 27): extraction, verdicts, containers, stdio, the
sandbox's own uid, parallel grading. Each test is built from one of the issue's hostile completions."""
import os
import threading
import time
from pathlib import Path

import pytest

from delta_repro.rewards import (MAX_CODE_CHARS, code_reward, extract_boxed, extract_choice, extract_code,
                                 extract_final_answer, has_program, run_tests_sandboxed)

FIX = Path(__file__).parent / "fixtures"
MB = 1_000_000
DEGENERATE = {  # degenerate completions up to 1 MB; each took seconds to minutes in a backtracking extractor
    "unclosed fence, 40,000 newlines": "```python\n" + "\n" * 40_000,
    "unclosed fence, 1 MB of newlines": "```python\n" + "\n" * (MB - 10),
    "unclosed fence, 4,000 newlines, 400,000 dashes": "```python\n" + "\n" * 4_000 + "-" * 400_000,
    "unclosed fence, newlines then dashes to 1 MB": "```\n" + "\n" * 40_000 + "-" * (MB - 40_004),
    "1 MB of fences": "```\n" * (MB // 4),
    "1 MB of backticks": "`" * MB,
    "a 1 MB info string": "```" + "-" * MB + "\n",
    "1 MB of closed blocks": "```python\nx = 1\n```\n" * (MB // 20),
    "1 MB of braces after a box": "\\boxed{" + "{}" * (MB // 2),
    "1 MB of unclosed boxes": "\\boxed{" * (MB // 7),
    "1 MB of 'Answer:' lines": "Answer:\n" * (MB // 8),
}


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_every_extractor_is_linear_and_bounded_on_degenerate_completions(name):
    text = DEGENERATE[name]
    for extract in (extract_code, extract_boxed, extract_final_answer, extract_choice):
        t0 = time.perf_counter()
        extract(text)
        # a generous bound against a stall (benchmarks/graders.py --sections extraction prints the figures):
        # the backtracking fence pattern took 7.4 s on 40,000 newlines and 16 s on the dashes
        assert time.perf_counter() - t0 < 1.0, (name, extract.__name__)


def test_a_degenerate_code_completion_is_graded_zero_quickly():
    t0 = time.perf_counter()
    bad = "```python\n" + "\n" * 4_000 + "-" * 400_000  # end to end this took 11.1 s in the parent
    assert code_reward([bad], [["assert add(1, 2) == 3"]]) == [0.0]
    assert time.perf_counter() - t0 < 10
    assert extract_code("x" * (MAX_CODE_CHARS + 1)) == ""  # past the bound: no program


@pytest.mark.parametrize("fence", ["```python", "```py", "```python3", "```Python", "```PY3", "```", "```python   ",
                                   "```python title=solution.py"])
def test_the_usual_fence_spellings_are_read(fence):
    assert extract_code(f"Here it is:\n{fence}\ndef add(a, b):\n    return a + b\n```\nDone.") == \
        "def add(a, b):\n    return a + b\n"
    assert code_reward([f"{fence}\ndef add(a, b):\n    return a + b\n```"], [["assert add(1, 2) == 3"]]) == [1.0]


def test_blocks_of_other_languages_and_unclosed_blocks_are_not_programs():
    assert extract_code("```bash\npip install x\n```\nthen:\n```python\nx = 1\n```") == "x = 1\n"
    assert extract_code("```python\nx = 1\n```\n```python\ny = 2\n```") == "y = 2\n"  # the last block
    assert extract_code("```python\nx = 1\n```\nnow a fence left open:\n```python\n" + "\n" * 1000) == "x = 1\n"
    assert extract_code("```bash\nls\n```") == "```bash\nls\n```"  # no Python block: the whole completion


@pytest.mark.parametrize("completion, want", [
    ("```python\ndef f(x):\n    return 2 * x\n```", True),
    ("def f(x):\n    return 2 * x\n", True),                  # no fence: the whole completion, and it compiles
    ("```python\ndef f(x):\n    return 3\n```", True),         # wrong, but a program: unparseable means no program
    ("\\boxed{}", False),                                      # the math format (the code warm start emitted it)
    ("The function doubles its input.", False),                # prose
    ("```python\ndef f(x):\n    return 10 * x +\n```", False),  # cut off mid-expression
    ("```python\n\n```", False),                               # an empty block
    ("", False),
    ("(" * 100_000, False), ("-" * 100_000 + "1", False), ("1+" * 300_000 + "1", False),  # the parser's own limits
])
def test_a_code_completion_is_parseable_when_it_holds_a_program_that_compiles(completion, want):
    t0 = time.perf_counter()
    assert has_program(completion) is want
    assert time.perf_counter() - t0 < 5  # ~0.2 s for the deepest here; compile runs nothing
    from delta_repro.evaluation import grade
    row = {"tests": ["assert f(2) == 4"], "test_mode": "functional"}
    assert grade(row, completion)[1] is want


# --- verdicts only a correct program can earn (item 2) ---------------------------------------------------------------

def humaneval_plus_test(inputs, results, entry):
    "A HumanEval+ test as evalplus writes it: an exact match, else np.allclose / assert_allclose for float results."
    return f'''
import numpy as np

def is_floats(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False

def assertion(out, exp, atol):
    exact_match = out == exp
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if not exact_match and atol != 0:
        np.testing.assert_allclose(out, exp, atol=atol)
    else:
        assert exact_match

def check(candidate):
    inputs = {inputs!r}
    results = {results!r}
    for i, (inp, exp) in enumerate(zip(inputs, results)):
        assertion(candidate(*inp), exp, 0)

check({entry})
'''


# the shapes of HumanEval/2 (truncate_number: a float), HumanEval/4 (mean_absolute_deviation: a float) and
# HumanEval/45 (triangle_area: a float), and a one-element float list
FLOAT_PROBLEMS = {
    "truncate_number": ([[3.5], [1.33]], [0.5, 0.33000000000000007], "def truncate_number(x):\n    return x % 1.0"),
    "mean_absolute_deviation": ([[[1.0, 2.0, 3.0, 4.0]]], [1.0],
                                "def mean_absolute_deviation(xs):\n    m = sum(xs) / len(xs)\n"
                                "    return sum(abs(x - m) for x in xs) / len(xs)"),
    "triangle_area": ([[5, 3], [2, 2]], [7.5, 2.0], "def triangle_area(a, h):\n    return a * h / 2.0"),
    "one_float_list": ([[2.0]], [[1.4142135623730951]], "def one_float_list(x):\n    return [x ** 0.5]"),
}


@pytest.mark.parametrize("entry", list(FLOAT_PROBLEMS))
def test_an_empty_list_does_not_pass_a_float_test_by_broadcasting(entry):
    inputs, results, solution = FLOAT_PROBLEMS[entry]
    test = humaneval_plus_test(inputs, results, entry)
    assert run_tests_sandboxed(solution, [test]) == (1, 1)  # the reference passes
    for garbage in ("[]", "[[]]", "()", "None", "0"):  # broadcast or all() of nothing: each passed np.allclose
        assert run_tests_sandboxed(f"def {entry}(*args):\n    return {garbage}", [test]) == (0, 1), garbage
    allclose = ("import numpy as np\ndef check(candidate):\n    assert np.allclose(candidate(*%r), %r, rtol=1e-07, atol=1e-6)\n"
                "check(%s)" % (inputs[0], results[0], entry))
    assert run_tests_sandboxed(solution, [allclose]) == (1, 1)
    assert run_tests_sandboxed(f"def {entry}(*args):\n    return []", [allclose]) == (0, 1)


@pytest.mark.parametrize("test", ["assert all(map(f, [1, 2, 3]))",
                                  "for a, b in zip(map(f, [1, 2]), [True, True]):\n    assert a == b",
                                  "assert all(f(x) for x in [1, 2])"])
def test_a_candidates_stop_iteration_is_a_failure_not_the_end_of_the_test(test):
    assert run_tests_sandboxed("def f(x):\n    raise StopIteration", [test]) == (0, 1)
    assert run_tests_sandboxed("def f(x):\n    return True", [test]) == (1, 1)


def test_an_entry_point_named_like_a_builtin_must_be_defined_by_the_candidate():
    check = "def check(candidate):\n    assert candidate(2, 3) == 8\n    assert candidate(2, 0) == 1\ncheck(pow)"
    assert run_tests_sandboxed("", [check]) == (0, 1)  # the built-in pow passed before
    assert run_tests_sandboxed("x = 1", [check]) == (0, 1)
    assert run_tests_sandboxed("def pow(a, b):\n    return a ** b", [check]) == (1, 1)
    assert run_tests_sandboxed("def pow(a, b):\n    return a * b", [check]) == (0, 1)
    # MBPP style: the test calls the function directly, so the data set names the entry point
    mbpp = ["assert pow(2, 3) == 8", "assert len([pow(1, 1)]) == 1"]
    assert run_tests_sandboxed("", mbpp, entry_point="pow") == (0, 2)
    assert run_tests_sandboxed("def pow(a, b):\n    return a ** b", mbpp, entry_point="pow") == (2, 2)
    # a test that expects an error does not take a missing entry point for it
    expects = "def check(candidate):\n    try:\n        candidate(-1)\n    except Exception:\n        return\n    assert False\ncheck(sqrt_strict)"
    assert run_tests_sandboxed("", [expects]) == (0, 1)
    assert run_tests_sandboxed("def sqrt_strict(x):\n    raise ValueError(x)", [expects]) == (1, 1)
    with pytest.raises(ValueError, match="entry_point"):
        run_tests_sandboxed("", mbpp, entry_point="not a name")


@pytest.mark.parametrize("forger", ["def isclose(*a, **k):\n    return True",
                                    "class np:\n    allclose = isclose = staticmethod(lambda *a, **k: True)",
                                    "class math:\n    isclose = staticmethod(lambda *a, **k: True)"])
def test_test_helpers_are_never_the_candidates_definitions(forger):
    tests = ["assert isclose(area(2), 12.566, rel_tol=1e-3)", "assert np.allclose(area(1), 3.14159, atol=1e-4)",
             "assert math.isclose(area(3), 28.274, rel_tol=1e-3)"]
    assert run_tests_sandboxed(forger + "\ndef area(r):\n    return 0", tests) == (0, 3)
    assert run_tests_sandboxed("import math\ndef area(r):\n    return math.pi * r * r", tests) == (3, 3)


# --- correct programs score 1 (item 3) --------------------------------------------------------------------------------

@pytest.mark.parametrize("code, test", [
    ("from collections import Counter\ndef f(s):\n    return Counter(s)", "assert f('abca') == {'a': 2, 'b': 1, 'c': 1}"),
    ("from collections import defaultdict\ndef f(xs):\n    d = defaultdict(list)\n    for x in xs: d[x % 2].append(x)\n"
     "    return d", "assert f([1, 2, 3]) == {1: [1, 3], 0: [2]}"),
    ("from collections import OrderedDict\ndef f():\n    return OrderedDict([('b', 1), ('a', 2)])", "assert f() == {'a': 2, 'b': 1}"),
    ("from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f(a):\n    return P(a, a + 1)",
     "assert f(1) == (1, 2)"),
    ("from collections import deque\ndef f(xs):\n    d = deque(xs)\n    d.rotate(1)\n    return d", "assert list(f([1, 2, 3])) == [3, 1, 2]"),
    ("from collections import Counter\ndef f(s):\n    return [Counter(s)]", "assert f('aa') == [{'a': 2}]"),  # nested
])
def test_standard_library_containers_compare_as_in_plain_python(code, test):
    assert run_tests_sandboxed(code, [test]) == (1, 1)
    # issue 40: they cross with their type, so what plain Python fails fails here too (a deque is not a list)
    assert run_tests_sandboxed("from collections import deque\ndef f(): return deque([1])", ["assert f() == [1]"]) == (0, 1)


def test_a_stdio_problem_with_400_tests_runs_in_one_sandbox_within_the_budget():
    tests = [f"__check_io({f'{i} {i + 1}'!r}, {str(2 * i + 1)!r})" for i in range(400)]
    code = "a, b = map(int, input().split())\nprint(a + b)"
    t0 = time.perf_counter()
    r = run_tests_sandboxed(code, tests, mode="stdio")  # one sandbox start per test ended at 345/400 and reward 0
    assert r == (400, 400) and r.stopped is None, r
    assert time.perf_counter() - t0 < 10
    assert run_tests_sandboxed("print(1)", tests[:5], mode="stdio") == (1, 5)  # only the first case's answer is 1
    wrong = code.replace("a + b", "a - b")
    assert code_reward([f"```python\n{wrong}\n```", f"```python\n{code}\n```"], [tests[:20]] * 2,
                       test_mode=["stdio"] * 2) == [0.0, 1.0]


# --- one sandbox cannot starve another; stdin is read-only (item 4) ---------------------------------------------------

THREADED = ("import threading\nimport sys\nout = []\n"
            "ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]\n"
            "[t.start() for t in ts]\n[t.join() for t in ts]\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid per sandbox needs root (as another user the process limit is the user's)")
def test_a_sandbox_holding_its_threads_does_not_starve_a_concurrent_one():
    hog = "import threading, time\nfor _ in range(14):\n    threading.Thread(target=time.sleep, args=(30,)).start()\n"
    hog += "def add(a, b):\n    time.sleep(30)"  # the run lasts until its deadline, its threads held
    hog_done = threading.Event()
    t = threading.Thread(target=lambda: (run_tests_sandboxed(hog, ["assert add(1, 2) == 3"], timeout_s=8), hog_done.set()))
    t.start()
    try:
        time.sleep(2.5)  # the hog has its 14 threads by now (it starts in well under a second)
        assert not hog_done.is_set()
        functional = THREADED + "def count():\n    return len(out)"
        assert run_tests_sandboxed(functional, ["assert count() == 8"]) == (1, 1)
        stdio = THREADED + "print(len(out) + int(input()))"
        assert run_tests_sandboxed(stdio, ['__check_io("1", "9")'], mode="stdio") == (1, 1)
    finally:
        t.join(30)


def test_the_candidates_stdin_is_read_only():
    probe = ("import os\ntry:\n    os.write(0, b'x' * (16 << 20))\n    print('wrote')\nexcept OSError:\n    print('refused')\n")
    assert run_tests_sandboxed(probe, ['__check_io("some input", "refused")'], mode="stdio") == (1, 1)
    probe_file = "import sys\ntry:\n    sys.stdin.buffer.raw.write(b'x')\n    print('wrote')\nexcept (OSError, ValueError):\n    print('refused')\n"
    assert run_tests_sandboxed(probe_file, ['__check_io("input", "refused")'], mode="stdio") == (1, 1)


# --- every code data set is linted when loaded (item 2, last bullet) --------------------------------------------------

def test_humaneval_plus_problems_whose_tests_cannot_grade_are_left_out_when_loaded(tmp_path, monkeypatch):
    from delta_repro import data, rewards
    monkeypatch.setenv(rewards.LINT_CACHE_ENV, str(tmp_path))
    with pytest.warns(UserWarning, match="HumanEval/32") as w:
        ds = data.load_humaneval_plus(FIX / "humanevalplus_lint.jsonl")
    assert ds["problem_id"] == ["HumanEval/0"]  # the broken HumanEval/32 and the weak zip-only test are left out
    report = rewards.LINT_REPORTS["HumanEval+"]
    assert report["kept"] == 1 and dict(report["left_out"]).keys() == {"HumanEval/32", "HumanEval/900"}
    assert "reference solution passes 0/1" in dict(report["left_out"])["HumanEval/32"]
    assert "trivial program" in dict(report["left_out"])["HumanEval/900"]
    assert "2 of 3 problems left out" in str(w[-1].message)
    assert code_reward(["def add(a, b):\n    return a + b"], ds["tests"], entry_point=ds["entry_point"]) == [1.0]
    # the verdicts are cached by content: a second load grades nothing
    monkeypatch.setattr(rewards, "_lint_one", lambda *a: pytest.fail("graded again"))
    with pytest.warns(UserWarning, match="HumanEval/32"):
        assert data.load_humaneval_plus(FIX / "humanevalplus_lint.jsonl")["problem_id"] == ["HumanEval/0"]


def test_stdio_problems_that_a_trivial_program_passes_are_left_out(tmp_path, monkeypatch):
    from delta_repro import data, rewards
    monkeypatch.setenv(rewards.LINT_CACHE_ENV, str(tmp_path))
    with pytest.warns(UserWarning, match="weak-1"):
        ds = data.load_livecodebench(FIX / "livecodebench_lint.jsonl")
    assert len(ds) == 1 and ds[0]["problem_id"] != "weak-1"
    assert "print(0)" in dict(rewards.LINT_REPORTS["LiveCodeBench"]["left_out"])["weak-1"]


def test_the_lint_keeps_good_problems_of_every_loader(tmp_path, monkeypatch):
    from delta_repro import data, rewards
    monkeypatch.setenv(rewards.LINT_CACHE_ENV, str(tmp_path))
    for loader, fixture in ((data.load_humaneval_plus, "humanevalplus.jsonl"), (data.load_mbpp_plus, "mbppplus.jsonl"),
                            (data.load_livecodebench, "livecodebench.jsonl"), (data.load_eurus2_code, "eurus2.jsonl")):
        ds = loader(FIX / fixture)
        assert len(ds) == 1 and rewards.LINT_REPORTS[ds[0]["source"]] == {"kept": 1, "left_out": []}
    with pytest.raises(ValueError, match="tests"):
        rewards.lint_code_problems(ds.remove_columns("tests"))


# --- parallel grading within a budget (item 5) ------------------------------------------------------------------------

def test_a_batch_is_graded_in_parallel_within_its_budget():
    sleeper = "import time\ntime.sleep(100)"
    right = "def add(a, b):\n    return a + b"
    t0 = time.perf_counter()
    r = code_reward([sleeper] * 8 + [right], [["assert add(1, 2) == 3"]] * 9, timeout_s=3, workers=9)
    assert r == [0.0] * 8 + [1.0]
    assert time.perf_counter() - t0 < 3 * 8  # in turn: 8 x 3 s at least
    logged = {}
    t0 = time.perf_counter()
    r = code_reward([sleeper] * 6, [["assert add(1, 2) == 3"]] * 6, workers=2, batch_budget_s=3, log_metric=logged.__setitem__)
    assert r == [0.0] * 6 and time.perf_counter() - t0 < 3 + 5  # the budget, not 6 x 10 s / 2
    assert logged["code/over_budget_frac"] >= 0.5 and logged["code/stopped_frac"] == 1.0
    for bad in (dict(workers=0), dict(batch_budget_s=0), dict(timeout_s=-1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            code_reward([right], [["assert add(1, 2) == 3"]], **bad)


def test_each_running_sandbox_holds_a_uid_no_other_process_or_thread_has(tmp_path, monkeypatch):
    import subprocess
    import sys

    from delta_repro import sandbox as S
    with S._own_uid(True) as a, S._own_uid(True) as b:
        assert a != b and a in S.SANDBOX_UIDS and b in S.SANDBOX_UIDS
    with S._own_uid(False) as none:
        assert none == 0  # not root, or no isolation: the run keeps its uid
    # another process (a second trainer on the host) holds slot k: this one passes it by
    monkeypatch.setattr(S, "_UID_LOCKS", str(tmp_path))
    k = 7
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               f"fd = os.open({str(tmp_path / str(k))!r}, os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(S, "_UID_NEXT", [k])
        with S._own_uid(True) as uid:
            assert uid == S.SANDBOX_UIDS[k + 1]
    finally:
        holder.kill()
        holder.wait()
    monkeypatch.setattr(S, "_UID_NEXT", [k])
    with S._own_uid(True) as uid:  # its lock died with it
        assert uid == S.SANDBOX_UIDS[k]


def test_a_function_of_the_prompt_that_the_test_calls_is_the_prompts():
    # HumanEval/38: the test encodes with the prompt's encode_cyclic (`helpers`, from the problem) and decodes with the
    # candidate's decode_cyclic; a completion that redefines encode_cyclic changes nothing (issue 40: it passed 1/1)
    from delta_repro.sandbox import prompt_helpers
    prompt = ("def encode_cyclic(s):\n    groups = [s[3 * i:min(3 * i + 3, len(s))] for i in range((len(s) + 2) // 3)]\n"
              "    return ''.join((g[1:] + g[0]) if len(g) == 3 else g for g in groups)\n")
    test = ("def check(candidate):\n    for s in ('abcdef', 'hello world', 'xy'):\n"
            "        assert candidate(encode_cyclic(s)) == s\ncheck(decode_cyclic)")
    helpers = prompt_helpers(prompt + "def decode_cyclic(s):\n    'Decode.'\n", "decode_cyclic")
    right = "def decode_cyclic(s):\n    return encode_cyclic(encode_cyclic(s))"
    assert run_tests_sandboxed(prompt + right, [test], helpers=helpers) == (1, 1)
    forged = "def encode_cyclic(s):\n    return s\ndef decode_cyclic(s):\n    return s"
    assert run_tests_sandboxed(forged, [test], helpers=helpers) == (0, 1)
    assert run_tests_sandboxed(forged, [test]) == (1, 1)  # without the problem's helpers the name is the candidate's
    assert code_reward([forged], [[test]], entry_point=["decode_cyclic"], helpers=[helpers]) == [0.0]
