"""Grading and sandbox: a table of tricky math answers, multiple choice, and code that tries to misbehave."""
import os
import tempfile
import threading
import time

import pytest

from delta_repro.rewards import (MAX_ANSWER_CHARS, MAX_ANSWER_DEPTH, MAX_ANSWER_WINDOW, answer_rejection, choice_reward,
                                 code_reward, extract_boxed, extract_choice, extract_final_answer, grade_math, math_reward,
                                 normalize_answer, run_tests_sandboxed)

GRADING = [
    # (completion, gold, expected)
    (r"The answer is \boxed{\frac{1}{2}}.", "1/2", True),
    (r"\boxed{\frac{1}{2}}", "0.5", True),  # fraction vs decimal
    (r"\boxed{0.5}", r"\frac{1}{2}", True),
    (r"\boxed{\dfrac{3}{4}}", "3/4", True),  # LaTeX vs plain
    (r"first \boxed{2} then, correcting myself, \boxed{3}", "3", True),  # the last boxed answer counts
    (r"first \boxed{3} then \boxed{2}", "3", False),
    (r"\boxed{\frac{\sqrt{2}}{2}}", r"\frac{1}{\sqrt{2}}", True),  # nested braces, symbolic equality
    (r"\boxed{\text{5}}", "5", True),  # \text{} wrapper
    (r"\boxed{5\text{ cm}}", "5", True),  # units
    (r"\boxed{1,000}", "1000", True),  # thousands separator
    (r"\boxed{1000}", "1000", True),
    (r"\boxed{\pm 2}", r"\pm 2", True),
    (r"\boxed{[1, 2)}", "[1,2)", True),  # intervals
    (r"\boxed{(1, 2]}", "[1,2)", False),
    (r"\boxed{\{1, 2, 3\}}", r"\{3, 2, 1\}", True),  # sets, order-free
    (r"\boxed{x^2 + 2x + 1}", "(x+1)^2", True),
    (r"\boxed{42}", "41", False),
    ("Some reasoning.\nAnswer: 17", "17", True),  # an 'Answer:' final line
    ("x" * 200_000 + r" \boxed{9}", "9", True),  # very long output
    ("I am not sure.", "3", None),  # no answer: unparseable, not wrong
    ("", "3", None),
    # answers as people write them (issue 40, item 5); each scored 0 (False or None) before
    (r"\boxed{1\,000}", "1000", True),  # LaTeX thin space between digit groups
    (r"\boxed{1\ 000\ 000}", "1000000", True),
    (r"\boxed{1,\!000}", "1000", True),  # MATH's own style
    ("\\boxed{12\u2009345}", "12345", True),  # U+2009 thin space
    ("\\boxed{12\u202f345}", "12345", True),  # U+202F narrow no-break space
    (r"\boxed{1 000}", "1000", True),
    (r"\boxed{10\,000}", r"10\,000", True),  # the gold is read the same way
    (r"\boxed{1\,000}", "100", False),
    (r"\boxed{2 5}", "25", False),  # not a digit group: left to math-verify
    (r"so \boxed 5", "5", True),  # a box without braces, as TeX allows
    (r"so \boxed 5.", "5", True),
    (r"\boxed -3", "-3", True),
    (r"\boxed 5", "6", False),
    ("**Answer:** 3", "3", True),  # Markdown
    ("**Answer: 3**", "3", True),
    ("**Final Answer**: 3", "3", True),
    ("### Final answer: 12.", "12", True),
    ("- *Answer*: 7", "7", True),
    ("Answer: **3**.", "3", True),
    ("**Answer:**\n\n**42**", "42", True),
    ("**Answer:** 3", "4", False),
    (r"\boxed{0.\overline{3}}", "1/3", True),  # repeating decimals
    (r"\boxed{0.\overline{3}}", r"\frac{1}{3}", True),
    (r"\boxed{0.1\overline{6}}", "1/6", True),
    (r"\boxed{-2.\overline{45}}", r"-\frac{27}{11}", True),
    (r"\boxed{0.\bar{142857}}", "1/7", True),
    (r"\boxed{1.\dot{3}}", "4/3", True),
    (r"\boxed{0.\overline{9}}", "1", True),
    (r"\boxed{0.\overline{3}}", "0.33", False),
    (r"\boxed{7}" + " and then more words" * 2_000, "7", True),  # a box followed by 40,000 characters
    (r"\boxed{7} " + "{" * 40_000, "7", True),
    # answers as a mathematician reads them (issue 50, item 1); each row's rule has a positive and a negative row
    (r"\boxed{(1,\;100)}", "1100", False),  # a comma and a LaTeX space separate items: a pair, not 1100
    (r"\boxed{(1,\;100)}", "(1,100)", True),
    (r"\boxed{[1,\;100]}", "1100", False),  # an interval
    (r"\boxed{\{1,\ 100\}}", "1100", False),  # a set
    (r"\boxed{1,\;100}", "1100", False),  # a list
    (r"\boxed{(1\,000, 2)}", "(1000,2)", True),  # digit groups inside a pair still join
    (r"so \boxed 1\,000", "1000", True),  # a bare box reads a grouped number whole
    (r"so \boxed 1\,000", "1", False),
    (r"so \boxed 1\,000.", "1000", True),
    (r"\boxed{\sqrt\sqrt 3}", "3", False),  # malformed LaTeX math-verify reads too kindly
    (r"\boxed{\frac\frac12 3}", "3", False),
    (r"\boxed{\not 3}", "3", False),
    (r"\boxed{\sqrt{\sqrt{3}}}", "3^{1/4}", True),  # the same written properly
    (r"\boxed{\sqrt{2}\sqrt{2}}", "2", True),  # a root after a root's braced argument is no malformed LaTeX
    (r"\boxed{\frac12}", "0.5", True),
    (r"\boxed{12.5\%}", "12.5", True),  # percent
    (r"\boxed{12.5\%}", r"12.5\%", True),
    (r"\boxed{12.5\%}", "13", False),
    ("Answer: 12.5%", "12.5", True),
    (r"\boxed{30^\circ}", "30", True),  # degrees
    (r"\boxed{30^{\circ}}", "30", True),
    ("\\boxed{30°}", "30", True),
    ("\\boxed{30°}", "60", False),
    (r"\boxed{5~\text{cm}}", "5", True),  # a unit in \text{}
    (r"\boxed{5\,\mathrm{kg}}", "5", True),
    (r"\boxed{5~\text{cm}}", "6", False),
    (r"\boxed{x\text{ cm}}", "5", False),  # only a number sheds its dress
    (r"\boxed{12.}", "12", True),  # a trailing period
    (r"\boxed{12.}", "13", False),
    ("### Final Answer\n\n42", "42", True),  # a heading, the answer on the next line
    ("**Final Answer**\n42", "42", True),
    ("### Final Answer\n\n41", "42", False),
    ("The final answer is: 42", "42", True),  # "final answer is" lines
    ("The final answer is $42$.", "42", True),
    ("The final answer is 41.", "42", False),
    ("Answer: 2 1/2", "5/2", True),  # mixed numbers
    ("Answer: -3 3/4", "-15/4", True),
    (r"\boxed{2\frac{1}{2}}", "2.5", True),  # math-verify reads this one as 2½ itself
    ("Answer: 2 1/2", "1", False),
    (r"\boxed{2\frac{1}{2}}", "1", False),
    ("Answer: 2 3/2", "3.5", False),  # not a mixed number (the fraction is not proper): left to math-verify
    ("Put your final answer within \\boxed{}.\nSo 3 + 4 = 7.\n**Answer:** 7", "7", True),  # an echoed empty box
    ("Put your final answer within \\boxed{}.\nSo 3 + 4 = 7.\n**Answer:** 7", "0", False),
    (r"\boxed{5} and \boxed{ }", "5", True),  # a blank box after a real one: the real one
    (r"\boxed{}", "0", None),  # only an empty box: no answer
    (r"\boxed{3}" + " words" * 6_000 + "\nAnswer: 4", "4", True),  # an answer line at the end beats a box 36K earlier
    (r"\boxed{3}" + " words" * 6_000 + "\nAnswer: 4", "3", False),
]


@pytest.mark.parametrize("completion, gold, expected", GRADING, ids=[f"case{i}" for i in range(len(GRADING))])
def test_grading_table(completion, gold, expected):
    assert grade_math(completion, gold) is expected


def test_prompt_boxed_is_never_graded():
    # the reward sees completions only; a boxed answer inside the prompt column must not count
    assert math_reward(["I do not know"], ["4"], prompts=[r"Example: \boxed{4}. Now solve..."]) == [0.0]


def test_unparseable_is_logged_apart_from_wrong():
    logged = {}
    r = math_reward([r"\boxed{1}", r"\boxed{2}", "none"], ["1", "1", "1"], log_metric=logged.__setitem__)
    assert r == [1.0, 0.0, 0.0] and logged["math/unparseable_frac"] == pytest.approx(1 / 3)


def test_grading_works_outside_the_main_thread():
    out = {}
    t = threading.Thread(target=lambda: out.update(ok=grade_math(r"\boxed{\frac{2}{4}}", "1/2"),
                                                   bad=grade_math(r"\boxed{3}", "1/2")))
    t.start()
    t.join(60)
    assert out == {"ok": True, "bad": False}


def test_extractors():
    assert extract_boxed(r"\boxed{a\}b}") == r"a\}b"
    assert extract_boxed(r"\boxed{unclosed") is None
    assert extract_final_answer("final answer: 12") == "12"
    assert extract_choice("Thus the answer is (B).") == "B"
    assert extract_choice(r"\boxed{\text{D}}") == "D"
    assert extract_choice("no letter here") is None
    assert choice_reward(["Answer: C", "(A) is wrong, the answer is B"], ["C", "B"]) == [1.0, 1.0]


@pytest.mark.parametrize("shape", ["\n" * 40_000, "\\boxed{" * 10_000, "{" * 50_000 + "}" * 50_000,
                                   "Answer:" + " " * 100_000 + "x", ("a" * 50 + "\n") * 2_000 + "\\boxed{" + "}" * 30_000])
def test_degenerate_completions_are_graded_within_the_timeout(shape):
    # paper-length completions (20,480 tokens) of any shape: extraction is linear, the whole call bounded by timeout_s
    t0 = time.time()
    grade_math(shape, "42", timeout_s=2)
    assert time.time() - t0 < 2 + 1
    t0 = time.time()
    extract_final_answer(shape), extract_choice(shape)
    assert time.time() - t0 < 0.5


def test_a_40000_newline_completion_is_graded_within_timeout_s():
    t0 = time.time()
    assert grade_math("\n" * 40_000 + "\\boxed{42}", "42", timeout_s=5) is True
    assert grade_math("\n" * 40_000, "42", timeout_s=5) is None
    assert time.time() - t0 < 5


JUNK = {  # short degenerate answers (issue 21): each took the whole 5-second timeout in math-verify's parser or sympy
    "answer a, 40,000 spaces, b": "Answer: a" + " " * 40_000 + "b",
    "boxed sum of 5,001 ones": "\\boxed{" + "1+" * 5_000 + "1}",
    "boxed a, 20,000 spaces, b": "\\boxed{a" + " " * 20_000 + "b}",
    "frac nested 300 deep": "\\boxed{" + "\\frac{1}{" * 300 + "2" + "}" * 300 + "}",
    "answer of 15,000 x": "Answer: " + "x " * 15_000,
    "braces nested 12 deep (a 26-character answer)": "\\boxed{" + "{" * 12 + "42" + "}" * 12 + "}",
}


@pytest.mark.parametrize("completion", JUNK.values(), ids=JUNK.keys())
def test_junk_answers_are_wrong_at_once_without_a_parse(completion, monkeypatch):
    import delta_repro.rewards as R
    grade_math("\\boxed{1}", "1")  # math-verify's first import is not the grader's cost
    t0 = time.time()
    assert grade_math(completion, "42") is False
    assert time.time() - t0 < 0.5  # about 0.002 s; each took 3.7-5.0 s before
    monkeypatch.setattr(R, "_verify", lambda gold, answer: pytest.fail("parsed"))  # never handed to math-verify
    assert grade_math(completion, "42") is False


def test_answer_bounds_are_exact_and_leave_real_answers_alone():
    assert answer_rejection("1" * MAX_ANSWER_CHARS) is None and "longer than 512" in answer_rejection("1" * (MAX_ANSWER_CHARS + 1))
    assert answer_rejection("(" * MAX_ANSWER_DEPTH + ")" * MAX_ANSWER_DEPTH) is None
    assert "deeper than 8" in answer_rejection("[" * (MAX_ANSWER_DEPTH + 1))
    assert answer_rejection("()" * 20 + "{" * 8) is None  # depth, not the number of brackets
    # every answer of the grading table passes the screen, so it grades as before (test_grading_table), but for the
    # three malformed ones refused on purpose (issue 50: math-verify took each as 3)
    refused = [extract_final_answer(c) for c, _, e in GRADING if e is not None and answer_rejection(extract_final_answer(c))]
    assert refused == [r"\sqrt\sqrt 3", r"\frac\frac12 3", r"\not 3"]
    assert all("malformed LaTeX" in answer_rejection(a) for a in refused)
    with pytest.raises(ValueError, match="answer"):
        answer_rejection(None)


def test_normalize_answer_is_the_identity_on_answers_without_those_forms():
    # the SmolLM2 study's answers (`\boxed{N}`, N an integer) and every form math-verify already reads pass unchanged
    for a in ["17", "-4", "1,000", "1{,}000", r"\frac{1}{2}", "0.5", "(1, 2)", r"\{1, 2, 3\}", "x^2 + 1", "2 5", "1 0000",
              r"3\cdot 10^{5}", "12.345", r"\overline{AB}", r"\sqrt{2}", r"x\text{ cm}", ""]:
        assert normalize_answer(a) == a, a
    # a number in the dress people put on it sheds it (issue 50); math-verify read `5\text{ cm}` as 5 already
    assert normalize_answer(r"5\text{ cm}") == "5" and normalize_answer(r"12.5\%") == "12.5" and normalize_answer("2 1/2") == r"\frac{5}{2}"
    assert normalize_answer("1 000 000") == "1000000" and normalize_answer(r"-1\,234.5") == "-1234.5"
    assert normalize_answer(r"x = 0.\overline{6}") == r"x = \frac{2}{3}" and normalize_answer(r"0.\overline{0}") == "0"
    with pytest.raises(ValueError, match="answer"):
        normalize_answer(3)


def test_answer_precedence_and_the_window():
    # a braced box beats a bare one and an Answer line; a bare box beats an Answer line; the last of each kind counts
    assert extract_final_answer(r"\boxed{1} then \boxed 2 and Answer: 3") == "1"
    assert extract_final_answer("Answer: 3\n\\boxed 2 then \\boxed 4") == "4"
    assert extract_final_answer(r"a truncated \boxed{-1") is None and extract_final_answer(r"\boxed{") is None
    assert extract_final_answer(r"\fboxsep and \boxedx") is None  # other commands, not boxes
    # a box before the window is read if the window holds none (the last one, tried back from the window)
    tail = "x" * MAX_ANSWER_WINDOW
    assert extract_boxed(r"\boxed{1} \boxed{2}" + tail) == "2"
    assert extract_boxed(r"\boxed{1} \boxed{2" + tail) == "1"  # the last one never closes: the one before it
    assert extract_boxed(r"\boxed{5}" + tail + r"\boxed{9}") == "9"


@pytest.mark.parametrize("shape", ["*" * 200_000, "* " * 100_000, "**Answer**" * 50_000, "\\boxed 1" * 50_000,
                                   ("\\boxed{" + "x" * 3_000) * 300 + "y" * 40_000, "\\boxed" + " " * 200_000 + "5",
                                   "1\\," * 100_000, "\\boxed{}" * 100_000, "\\boxed{" * 50_000 + "}" * 50_000,
                                   "Final Answer\n" * 100_000, "final answer is " * 60_000, "### Final Answer" * 60_000,
                                   "\\boxed 1\\,000" * 60_000])
def test_the_new_forms_keep_extraction_linear(shape):
    t0 = time.time()
    extract_final_answer(shape)
    assert time.time() - t0 < 0.5  # 3-25 ms each on this machine


def test_rejected_and_timed_out_answers_are_logged_apart(monkeypatch):
    logged = {}
    r = math_reward([r"\boxed{1}", JUNK["frac nested 300 deep"], "no answer", r"\boxed{2}"], ["1"] * 4,
                    log_metric=logged.__setitem__)
    assert r == [1.0, 0.0, 0.0, 0.0]
    assert logged == {"math/unparseable_frac": 0.25, "math/rejected_frac": 0.25, "math/timeout_frac": 0.0,
                      "math/second_pass_frac": 0.0, "math/over_budget_frac": 0.0}
    import delta_repro.rewards as R
    monkeypatch.setattr(R, "_verify", lambda gold, answer: time.sleep(30))  # stands for a sympy blow-up
    monkeypatch.setattr(R, "GRADE_TIMEOUT_S", 1)
    assert math_reward([r"\boxed{1}"], ["1"], log_metric=logged.__setitem__) == [0.0] and logged["math/timeout_frac"] == 1.0


def test_math_batch_budget_bounds_the_call_and_spares_a_right_answer_after_slow_ones(monkeypatch):
    import delta_repro.rewards as R
    real = R._verify
    monkeypatch.setattr(R, "_verify", lambda gold, answer: time.sleep(30) if answer == "9" else real(gold, answer))
    grade_math(r"\boxed{5}", "5")  # math-verify's first parse (about 0.1 s, cold) is not what this test times
    logged = {}
    t0 = time.monotonic()
    r = math_reward([r"\boxed{9}"] * 30 + [r"so \boxed{5}"], ["5"] * 31, log_metric=logged.__setitem__, timeout_s=1,
                    batch_budget_s=2)
    took = time.monotonic() - t0
    # first pass: each gets max(0.05, 2 / 62) s, so 30 slow ones cost 1.5 s and the right one is graded within the
    # budget; the second pass has 0.5 s left for the slow ones, then the budget is spent
    assert r == [0.0] * 30 + [1.0] and took < 2 + 0.5
    assert logged["math/second_pass_frac"] == pytest.approx(30 / 31) and logged["math/over_budget_frac"] > 0.8
    # without slow answers the scores are those of grading each completion alone
    batch = [(c, g) for c, g, e in GRADING if len(c) < 1000]
    assert math_reward([c for c, _ in batch], [g for _, g in batch], batch_budget_s=10) == \
        [float(grade_math(c, g) is True) for c, g in batch]
    for kw, name in ((dict(timeout_s=0), "timeout_s"), (dict(batch_budget_s=float("nan")), "batch_budget_s"),
                     (dict(batch_budget_s=True), "batch_budget_s"), (dict(timeout_s="5"), "timeout_s")):
        with pytest.raises(ValueError, match=name):
            math_reward([r"\boxed{1}"], ["1"], **kw)


def test_grading_stays_linear_in_the_completion_length():
    # junk answers cost the extraction only: twice the length, about twice the time (not four times)
    grade_math("\\boxed{1}", "1")
    def t(n):
        text, best = "Answer: " + "x " * n, float("inf")
        for _ in range(7):
            t0 = time.perf_counter()
            grade_math(text, "42")
            best = min(best, time.perf_counter() - t0)
        return best
    small, large = t(100_000), t(400_000)
    assert large < 12 * small  # 4x the length: about 4x the time, 16x if quadratic


def test_a_slow_comparison_is_stopped_at_the_deadline(monkeypatch):
    import delta_repro.rewards as R
    monkeypatch.setattr(R, "_verify", lambda gold, answer: time.sleep(30))  # stands for a sympy blow-up
    t0 = time.time()
    assert grade_math(r"\boxed{1}", "1", timeout_s=1) is False
    assert time.time() - t0 < 2


@pytest.mark.parametrize("call, name", [
    (lambda: grade_math(None, "1"), "completion"), (lambda: grade_math(b"\\boxed{1}", "1"), "completion"),
    (lambda: grade_math("\\boxed{1}", 1), "gold"), (lambda: grade_math("\\boxed{1}", None), "gold"),
    (lambda: extract_boxed(None), "text"), (lambda: extract_boxed(["\\boxed{1}"]), "text"),
    (lambda: extract_final_answer(12), "completion"), (lambda: extract_choice(None), "completion"),
    (lambda: extract_choice(3.5), "completion"), (lambda: extract_choice("Answer: B", n_choices=0), "n_choices"),
    (lambda: extract_choice("Answer: B", n_choices=100), "n_choices"),
    (lambda: extract_choice("Answer: B", n_choices="4"), "n_choices"),
])
def test_non_string_inputs_are_value_errors_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_bad_gold_raises():
    with pytest.raises(ValueError, match="gold"):
        grade_math(r"\boxed{1}", "  ")
    with pytest.raises(ValueError, match="2 entries for 1 completions"):
        math_reward(["a"], ["1", "2"])


# --- sandbox -----------------------------------------------------------------------------------------------------
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]


def _sandbox_dirs():
    return {d for d in os.listdir(tempfile.gettempdir()) if d.startswith("delta_sandbox_")}


@pytest.mark.parametrize("name, code", [
    ("infinite loop", "def add(a, b):\n    while True: pass\nadd(1, 2)"),
    ("fork bomb", "import os\nwhile True:\n    os.fork()"),
    ("subprocess", "import subprocess\nsubprocess.run(['sleep', '100'])\ndef add(a, b): return a + b"),
    ("huge allocation", "x = bytearray(8 * 1024**3)\ndef add(a, b): return a + b"),
    # the sandbox's /tmp is its own: the write succeeds there, so the program is made wrong to score 0; the host's
    # /tmp must still not see the file
    ("write outside", "open('/tmp/delta_sandbox_escape.txt', 'w').write('x')\ndef add(a, b): return a - b + 1"),
    ("socket", "import socket\nsocket.create_connection(('127.0.0.1', 9))\ndef add(a, b): return a + b"),
    ("exit", "import sys\nsys.exit(0)"),
    ("kill parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b): return a + b"),
    ("syntax error", "def add(a, b) return a + b"),
    ("sleep", "import time\ntime.sleep(100)\ndef add(a, b): return a + b"),
])
def test_sandbox_abuse_returns_zero_quickly_and_leaves_nothing(name, code):
    before = _sandbox_dirs()
    t0 = time.time()
    passed, total = run_tests_sandboxed(code, ADD_TESTS, timeout_s=3)
    assert (passed, total) == (0, 2), name
    assert time.time() - t0 < 10, name
    assert not os.path.exists("/tmp/delta_sandbox_escape.txt")
    assert _sandbox_dirs() <= before


def test_sandbox_passes_good_code_and_counts_partial():
    assert run_tests_sandboxed("def add(a, b): return a + b", ADD_TESTS) == (2, 2)
    assert run_tests_sandboxed("def add(a, b): return a * b + 1 - 1 if a else b", ADD_TESTS) == (1, 2)
    logged = {}
    r = code_reward(["```python\ndef add(a, b):\n    return a + b\n```", "def add(a, b): return 0"],
                    [ADD_TESTS, ADD_TESTS], log_metric=logged.__setitem__)
    assert r == [1.0, 0.0] and logged["code/passed_frac"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="tests"):
        run_tests_sandboxed("x = 1", "assert x == 1")


def test_sandbox_files_inside_workdir_are_allowed():
    code = "open('scratch.txt', 'w').write('hi')\ndef add(a, b): return a + b"
    assert run_tests_sandboxed(code, ADD_TESTS) == (2, 2)


FORGED = '{"passed": 1, "total": 1}'


@pytest.mark.parametrize("attack", [
    # print the harness's old fixed marker and leave before the real one is written
    "import sys, os\nsys.stdout.write('\\n@@SANDBOX@@' + '%s' + '\\n'); sys.stdout.flush(); os._exit(0)" % FORGED,
    # read the one-time marker from the harness's frame
    "import sys\nprint('\\n' + sys._getframe(1).f_locals['marker'] + '%s')" % FORGED,
    "try:\n    1/0\nexcept Exception as e:\n    print('\\n' + e.__traceback__.tb_frame.f_back.f_locals['marker'] + '%s')" % FORGED,
    "import gc\nprint([o for o in gc.get_objects() if isinstance(o, dict) and 'marker' in o])",
    "print(open('spec.json').read())",
])
def test_sandbox_result_cannot_be_forged(attack):
    assert run_tests_sandboxed(attack, ["assert False"]) == (0, 1)


def test_choice_letters_in_prose_are_not_answers():
    assert extract_choice("The answer is (B).\nI hope this helps.") == "B"
    assert extract_choice("Answer: B, because option A is wrong") == "B"
    assert extract_choice("(B) is correct, as shown in part a.") == "B"
    assert extract_choice("**Answer: d**") == "D" and extract_choice("Answer: Because of (C)") == "C"
    # an article or pronoun that opens prose after "answer" is not a letter (found by an attack on the extractor)
    assert extract_choice("The answer is a bit tricky.") is None and extract_choice("Answer: I am not sure.") is None
    assert extract_choice("Answer: A simple check shows nothing.") is None
    assert extract_choice("The answer is b since") is None and extract_choice("The answer is I think B") is None
    # ... while a letter that ends its phrase, sits in parentheses or is a capital B-J is still read
    assert [extract_choice(t) for t in ("The answer is a.", "answer: (c) holds", "The answer is A because", "Answer:\nE",
                                        "The answer is I.", "Answer: G because")] == ["A", "C", "A", "E", "I", "G"]
    assert extract_choice("Answer: E", n_choices=4) is None and extract_choice("Answer: D", n_choices=4) == "D"


def test_reward_columns_must_match_the_completions():
    with pytest.raises(ValueError, match="answer"): choice_reward(["Answer: B", "Answer: C"], ["B"])
    with pytest.raises(ValueError, match="answer"): math_reward(["\\boxed{4}"], "4")
    with pytest.raises(ValueError, match="tests"): code_reward(["x=1", "y=2"], [["assert x == 1"]])
    with pytest.raises(ValueError, match="gold"): grade_math("no answer at all", "")
    with pytest.raises(ValueError, match="timeout_s"): grade_math("\\boxed{2}", "2", timeout_s=1.5)


def test_math_verifys_timeout_notice_is_dropped_and_its_other_warnings_kept(caplog, monkeypatch):
    # our grading bounds every comparison itself (_verify_within), so math-verify's one-time notice that its own
    # timeouts are off is noise in every notebook; any other warning of its loggers still gets through
    import logging
    import math_verify.parser
    from delta_repro.rewards import _verify
    monkeypatch.setattr(math_verify.parser, "TIMEOUT_WARNING_SHOWN", False)
    with caplog.at_level(logging.WARNING):
        assert _verify("17", "17")
        logging.getLogger("math_verify.parser").warning("something else")
    assert math_verify.parser.TIMEOUT_WARNING_SHOWN  # the notice was issued, and dropped
    assert [r.getMessage() for r in caplog.records if r.name.startswith("math_verify")] == ["something else"]
