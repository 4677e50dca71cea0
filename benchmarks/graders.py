"""Grader timings on degenerate completions (issues 11, 21), grading throughput, and the code sandbox's cost per run.

    python benchmarks/graders.py                        # every table at the sizes below
    python benchmarks/graders.py --scale 4 --json r.json
    python benchmarks/graders.py --batch 32 --adversarial-batch 32 --no-sandbox   # a quicker look
    python benchmarks/graders.py --sections degenerate,throughput                 # some tables only

Six tables:
1. shapes: the extractors (`extract_boxed`, `extract_final_answer`, `extract_choice`) and the whole `grade_math` call
   on degenerate completions of paper length (20,480 tokens) at n and 2n characters; the ratio t(2n)/t(n) is about
   2 for a linear pass (it was about 4 before issue 11: 40,000 newlines took 22 s, 10,000 `\\boxed{` 15 s).
2. degenerate answers: `grade_math` on the short junk answers of issue 21 (each took 3.7-5.0 s, the whole timeout,
   before answers were bounded in length and nesting); each must grade wrong in well under 0.1 s.
3. throughput: `math_reward` (what the trainer calls) on a rollout batch of `--batch` realistic completions (long
   chains of thought with inline LaTeX, 2,000-6,000 tokens, ending in a boxed answer; about half of them right) and
   on two adversarial batches of `--adversarial-batch` junk completions: the junk answers of table 2, and those and
   the shapes of table 1 in turn (its `sympy_blowup` still takes the whole timeout); graded completions per second,
   and what `math_reward` logged.
4. budget: `math_reward` on `--budget-batch` answers that sympy would work on for minutes (`\\boxed{10^{10^{7}}}`,
   each stopped at `--timeout`) followed by one right answer, with a batch budget of `--math-budget` seconds (issue
   40: 512 of them took 43 minutes before the budget): the call's wall time (within the budget plus a fraction of a
   second), the right answer's score (1: its first slice comes before the slow ones' second pass) and what was logged.
5. extraction: every extractor a completion reaches (`extract_code`, `extract_boxed`, `extract_final_answer`,
   `extract_choice`) on degenerate completions of 0.25 and 1 MB (unclosed fences before newlines and dashes, walls
   of fences and backticks, braces, unclosed boxes; issue 27): each well under 0.05 s (the old fence pattern took
   7.4 s on 40,000 newlines, 16 s on 4,000 newlines and 400,000 dashes).
6. sandbox: `run_tests_sandboxed` on a two-test program (bubblewrap start-up plus a round trip per call), on 1,000
   tests, `code_reward` on a batch of `--code-batch` completions in everyday styles (`CODE_KINDS`: asserts, a
   HumanEval+ numpy check, a generator, a Counter, stdio; half right): completions per second and this process's CPU
   per completion (issue 40: the tests run in the judge's sandbox, so it is about the two sandbox starts), and on
   replies built to stall the parent: a set of 70,000 integers sharing one hash value, and a reply over the size
   cap. Each must score 0 within the run's deadline.
"""
import argparse
import json
import math
import random
import resource
import statistics
import time
from pathlib import Path

SECTIONS = ("shapes", "degenerate", "throughput", "budget", "extraction", "sandbox")
EXTRACTION = {  # name: the completion for a size in characters (issue 27)
    "fence_newlines": lambda n: "```python\n" + "\n" * (n - 10),
    "fence_nl_dashes": lambda n: "```python\n" + "\n" * 4_000 + "-" * (n - 4_010),
    "fence_wall": lambda n: "```\n" * (n // 4),
    "backticks": lambda n: "`" * n,
    "info_string": lambda n: "```" + "-" * (n - 4) + "\n",
    "closed_blocks": lambda n: "```python\nx = 1\n```\n" * (n // 20),
    "boxed_braces": lambda n: "\\boxed{" + "{}" * ((n - 7) // 2),
    "boxed_open": lambda n: "\\boxed{" * (n // 7),
    "answer_lines": lambda n: "Answer:\n" * (n // 8),
    "newlines": lambda n: "\n" * n,
}
SHAPES = {  # name: (the completion for a size factor k, its size at k = 1 in paper terms)
    "newlines": (lambda k: "\n" * int(40_000 * k), "40,000 newlines"),
    "boxed_open": (lambda k: "\\boxed{" * int(10_000 * k), "10,000 unclosed \\boxed{"),
    "nested_braces": (lambda k: "\\boxed{" + "{" * int(40_000 * k) + "}" * int(40_000 * k), "80,000 nested braces"),
    "answer_spaces": (lambda k: "Answer:" + " " * int(80_000 * k) + "x", "'Answer:' + 80,000 spaces"),
    "answer_lines": (lambda k: "Answer:\n" * int(10_000 * k), "10,000 empty 'Answer:' lines"),
    "prose_then_box": (lambda k: "Let us think step by step. " * int(3_000 * k) + "\\boxed{42}", "3,000 sentences, then \\boxed{42}"),
    # sympy would work on this for minutes: grade_math stops at timeout_s (extraction stays linear)
    "sympy_blowup": (lambda k: "x " * int(1_000 * k) + "\\boxed{9^{9^{9^{9}}}}", "\\boxed{9^{9^{9^{9}}}} after 1,000 words"),
}

# the junk answers of issue 21, graded against "42"
DEGENERATE = {
    "answer_a_spaces_b": "Answer: a" + " " * 40_000 + "b",
    "boxed_sum_5000": "\\boxed{" + "1+" * 5_000 + "1}",
    "boxed_a_spaces_b": "\\boxed{a" + " " * 20_000 + "b}",
    "frac_nested_300": "\\boxed{" + "\\frac{1}{" * 300 + "2" + "}" * 300 + "}",
    "answer_x_15000": "Answer: " + "x " * 15_000,
    "braces_nested_200": "\\boxed{" + "{" * 200 + "1" + "}" * 200 + "}",  # short (409 characters) but deep
    "parens_nested_100": "\\boxed{" + "(" * 100 + "1" + ")" * 100 + "}",
}

_WORDS = ("we", "now", "consider", "the", "case", "where", "so", "that", "this", "gives", "hence", "note", "each",
          "term", "value", "both", "sides", "since", "then", "it", "follows", "check", "again", "carefully")


def _sentence(rng: random.Random) -> str:
    a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
    forms = [
        f"Let $x = {a}$ and $y = {b}$, so $x + y = {a + b}$ and $xy = {a * b}$.",
        f"Then $\\frac{{{a}}}{{{b}}} \\approx {a / b:.4f}$, which is {'more' if a > b else 'less'} than $1$.",
        f"Squaring both sides gives $(x - {a})^2 = x^2 - {2 * a}x + {a * a}$.",
        f"By AM-GM, $\\sqrt{{{a} \\cdot {b}}} \\le \\frac{{{a} + {b}}}{{2}} = {(a + b) / 2:g}$.",
        f"Wait, let me double-check: ${a} \\times {c} = {a * c}$, and ${a * c} \\bmod {b} = {a * c % b}$.",
        f"Substituting $n = {c}$ into $n^2 + {a}n$ gives ${c * c + a * c}$.",
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20))).capitalize() + ".",
        f"The sum $\\sum_{{k=1}}^{{{c}}} k^2 = {c * (c + 1) * (2 * c + 1) // 6}$.",
    ]
    return rng.choice(forms)


def _answer_pair(rng: random.Random) -> tuple[str, str, str]:
    "(a right boxed answer, the gold, a wrong boxed answer): the gold written as datasets write it."
    p, q = rng.randint(1, 50), rng.randint(2, 60)
    kind = rng.randrange(5)
    if kind == 0: return str(p * q), str(p * q), str(p * q + 1)
    if kind == 1: return f"\\frac{{{p}}}{{{q}}}", f"{p}/{q}", f"\\frac{{{p + 1}}}{{{q}}}"
    if kind == 2: return f"{p}\\sqrt{{{q}}}", f"{p}\\sqrt{{{q}}}", f"{p + 1}\\sqrt{{{q}}}"
    if kind == 3: return f"\\frac{{{p}\\sqrt{{3}}}}{{{q}}}", f"\\frac{{{p}\\sqrt{{3}}}}{{{q}}}", f"\\frac{{{p}}}{{{q}}}"
    return f"({p}, {q})", f"({p},{q})", f"({q}, {p + q})"


def realistic_batch(n: int, group: int = 16, seed: int = 0) -> tuple[list[str], list[str]]:
    """`n` chain-of-thought completions of 2,000-6,000 tokens (about 4 characters a token) ending in a boxed answer,
    in groups of `group` rollouts of one prompt (one gold per group, as TRL calls the reward: paper Table 5 has 16
    rollouts per prompt); about half of the rollouts are right, the wrong ones share a few wrong values."""
    rng = random.Random(seed)
    completions, golds = [], []
    for i in range(n):
        if i % group == 0: boxed, gold, wrong = _answer_pair(rng)
        target, parts, size = 4 * rng.randint(2_000, 6_000), [], 0
        while size < target:
            parts.append(_sentence(rng))
            size += len(parts[-1]) + 1
            if rng.random() < 0.08: parts.append("\n\n")
        answer = boxed if rng.random() < 0.5 else wrong if rng.random() < 0.7 else _answer_pair(rng)[0]
        completions.append(" ".join(parts) + f"\n\nTherefore, the final answer is $\\boxed{{{answer}}}$.")
        golds.append(gold)
    return completions, golds


def adversarial_batch(n: int, shapes: bool = True) -> tuple[list[str], list[str]]:
    """`n` junk completions: the degenerate answers above, then (with `shapes`) the paper-length shapes, in turn.
    The shapes include `sympy_blowup`, a short answer that sympy takes longer than any timeout to compare."""
    pool = list(DEGENERATE.values()) + ([make(1) for make, _ in SHAPES.values()] if shapes else [])
    return [pool[i % len(pool)] for i in range(n)], ["42"] * n


def _time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _throughput(math_reward, completions, golds) -> dict:
    logged = {}
    t0 = time.perf_counter()
    rewards = math_reward(completions, golds, log_metric=logged.__setitem__)
    seconds = time.perf_counter() - t0
    return dict(n=len(completions), seconds=seconds, per_second=len(completions) / seconds,
                mean_reward=sum(rewards) / len(rewards), logged=logged,
                mean_chars=sum(map(len, completions)) / len(completions))


def forged_reply_program(value: str) -> str:
    """A program whose `add` makes the harness reply `{"value": <value>}` (JSON text), built without ever making the
    object in the sandbox: it replaces `json.dumps`, which the harness calls. So a set of 70,000 integers that share
    one hash value costs the program a string join, while rebuilding it used to cost the parent minutes."""
    return ("import json\n_dumps = json.dumps\n"
            "def _forge(obj, *a, **k):\n"
            "    if type(obj) is dict and obj.get('value') == '@forged@':\n"
            f"        return '{{\"value\": ' + {value} + '}}'\n"
            "    return _dumps(obj, *a, **k)\n"
            "json.dumps = _forge\n"
            "def add(a, b): return '@forged@'\n")


def collision_reply(n: int, tag: str = "set") -> str:
    "Python source of the JSON of a set (or dict) of `n` integers that all hash to 0: multiples of 2**61 - 1."
    item = "str((2**61 - 1) * i)" if tag == "set" else "'[' + str((2**61 - 1) * i) + ', 0]'"
    return f"'{{\"{tag}\": [' + ','.join({item} for i in range(1, {n} + 1)) + ']}}'"


CODE_KINDS = [  # (right program, wrong program, tests, mode): the code batch of the sandbox table, in everyday styles
    ("def add(a, b):\n    return a + b", "def add(a, b):\n    return a - b",
     ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(0, 0) == 0", "assert add(10, 5) == 15"], "functional"),
    ("def mean(xs):\n    return sum(xs) / len(xs)", "def mean(xs):\n    return sum(xs) // len(xs)",
     ["import numpy as np\ndef check(candidate):\n    for inp, exp in [([1, 2], 1.5), ([3.0], 3.0), ([1, 2, 4], 7 / 3)]:\n"
      "        assert np.allclose(candidate(inp), exp, rtol=1e-07, atol=1e-6)\ncheck(mean)"], "functional"),
    ("def evens(n):\n    yield from range(0, n, 2)", "def evens(n):\n    yield from range(1, n, 2)",
     ["assert list(evens(10)) == [0, 2, 4, 6, 8]", "assert sum(evens(1000)) == 249500"], "functional"),
    ("from collections import Counter\ndef freq(s):\n    return dict(Counter(s))", "def freq(s):\n    return {c: 1 for c in s}",
     ["assert freq('abca') == {'a': 2, 'b': 1, 'c': 1}", "assert set(freq('xyz')) == {'x', 'y', 'z'}"], "functional"),
    ("a, b = map(int, input().split())\nprint(a * b)", "a, b = map(int, input().split())\nprint(a + b)",
     ["__check_io('3 4\\n', '12\\n')", "__check_io('0 9\\n', '0\\n')", "__check_io('5 5\\n', '25\\n')"], "stdio"),
]


def code_batch(n: int) -> tuple[list[str], list[list[str]], list[str]]:
    "(completions, tests, modes) of `n` code completions cycling through `CODE_KINDS`, right and wrong in turn, fenced."
    comps, tests, modes = [], [], []
    for i in range(n):
        right, wrong, t, mode = CODE_KINDS[i % len(CODE_KINDS)]
        comps.append(f"Here is my solution.\n```python\n{right if (i // len(CODE_KINDS)) % 2 == 0 else wrong}\n```\n")
        tests.append(t)
        modes.append(mode)
    return comps, tests, modes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="size factor of every shape (1 = about 20,480 tokens)")
    ap.add_argument("--timeout", type=int, default=5, help="grade_math's timeout_s, seconds")
    ap.add_argument("--repeats", type=int, default=3, help="timed repetitions (the median is printed)")
    ap.add_argument("--batch", type=int, default=256, help="realistic completions graded for the throughput figure")
    ap.add_argument("--adversarial-batch", type=int, default=256, help="junk completions graded for the throughput figure")
    ap.add_argument("--budget-batch", type=int, default=512, help="slow answers before the right one in the budget table")
    ap.add_argument("--math-budget", type=float, default=None, help="math_reward's batch_budget_s in the budget table "
                    "(default MATH_BATCH_BUDGET_S)")
    ap.add_argument("--collision-n", type=int, default=70_000, help="integers in the hash-collision reply")
    ap.add_argument("--no-sandbox", action="store_true", help="skip the code sandbox timings")
    ap.add_argument("--code-batch", type=int, default=64, help="code completions graded by code_reward for the sandbox table")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"tables to run, comma-separated, of {SECTIONS}")
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()
    if not (math.isfinite(a.scale) and 0 < a.scale <= 100): ap.error(f"--scale must be in (0, 100], got {a.scale}")
    if a.timeout < 1: ap.error(f"--timeout must be >= 1 second, got {a.timeout}")
    if a.repeats < 1: ap.error(f"--repeats must be >= 1, got {a.repeats}")
    if a.batch < 1 or a.adversarial_batch < 1: ap.error("--batch and --adversarial-batch must be >= 1")
    if a.budget_batch < 1: ap.error(f"--budget-batch must be >= 1, got {a.budget_batch}")
    if a.math_budget is not None and not (math.isfinite(a.math_budget) and a.math_budget > 0):
        ap.error(f"--math-budget must be a positive number of seconds, got {a.math_budget}")
    if a.collision_n < 1: ap.error(f"--collision-n must be >= 1, got {a.collision_n}")
    sections = a.sections.split(",")
    if not set(sections) <= set(SECTIONS): ap.error(f"--sections must be among {SECTIONS}, got {a.sections!r}")
    if a.no_sandbox: sections = [x for x in sections if x != "sandbox"]
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    from delta_repro.rewards import extract_boxed, extract_choice, extract_final_answer, grade_math, math_reward

    grade_math("\\boxed{1}", "1")  # math-verify's first import and compilation are not the grader's cost
    out = dict(scale=a.scale, timeout_s=a.timeout, repeats=a.repeats, sections=sections)
    if "shapes" in sections:
        rows = []
        print(f"scale={a.scale} timeout_s={a.timeout} repeats={a.repeats} (median seconds; ratio = t(2n) / t(n))")
        print(f"{'shape':>17} {'chars':>9} {'boxed':>8} {'final':>8} {'choice':>8} {'grade':>8} {'ratio':>6}  at scale 1")
        for name, (make, what) in SHAPES.items():
            res = {}
            for k in (a.scale, 2 * a.scale):
                text = make(k)
                res[k] = dict(chars=len(text),
                              boxed=_time(lambda: extract_boxed(text), a.repeats),
                              final=_time(lambda: extract_final_answer(text), a.repeats),
                              choice=_time(lambda: extract_choice(text), a.repeats),
                              grade=_time(lambda: grade_math(text, "42", timeout_s=a.timeout), a.repeats))
            one, two = res[a.scale], res[2 * a.scale]
            ext = lambda r: r["boxed"] + r["final"] + r["choice"]
            ratio = ext(two) / max(ext(one), 1e-9)
            rows.append(dict(shape=name, what=what, n=one, two_n=two, extract_ratio=ratio))
            print(f"{name:>17} {one['chars']:>9,} {one['boxed']:>8.4f} {one['final']:>8.4f} {one['choice']:>8.4f} "
                  f"{one['grade']:>8.3f} {ratio:>6.2f}  {what}")
            if two["grade"] > a.timeout + 1: print(f"  WARNING: grade_math took {two['grade']:.1f} s > timeout_s={a.timeout}")
        out["shapes"] = rows

    if "degenerate" in sections:
        print(f"\ndegenerate answers, grade_math(completion, '42', timeout_s={a.timeout}) (median seconds)")
        print(f"{'answer':>17} {'chars':>7} {'grade':>6} {'seconds':>8}")
        out["degenerate"] = []
        for name, text in DEGENERATE.items():
            result = grade_math(text, "42", timeout_s=a.timeout)
            t = _time(lambda: grade_math(text, "42", timeout_s=a.timeout), a.repeats)
            out["degenerate"].append(dict(answer=name, chars=len(text), grade=result, seconds=t))
            print(f"{name:>17} {len(text):>7,} {result!s:>6} {t:>8.4f}")

    if "throughput" in sections:
        print("\nthroughput: math_reward on a rollout batch (graded completions per second)")
        real = _throughput(math_reward, *realistic_batch(a.batch))
        answers = _throughput(math_reward, *adversarial_batch(a.adversarial_batch, shapes=False))
        junk = _throughput(math_reward, *adversarial_batch(a.adversarial_batch))
        out["throughput"] = dict(realistic=real, junk_answers=answers, adversarial=junk)
        for name, r in (("realistic", real), ("junk answers", answers), ("every junk", junk)):
            logged = ", ".join(f"{k}={v:.3f}" for k, v in sorted(r["logged"].items()))
            print(f"{name:>12}: {r['n']} completions of {r['mean_chars']:,.0f} characters on average in {r['seconds']:.2f} s "
                  f"= {r['per_second']:.1f} per second (mean reward {r['mean_reward']:.3f}; logged {logged})")

    if "budget" in sections:
        from delta_repro.rewards import MATH_BATCH_BUDGET_S
        budget = a.math_budget or MATH_BATCH_BUDGET_S
        completions = [r"\boxed{10^{10^{7}}}"] * a.budget_batch + [r"so the answer is \boxed{5}"]
        logged = {}
        t0 = time.perf_counter()
        rewards = math_reward(completions, ["5"] * len(completions), log_metric=logged.__setitem__,
                              timeout_s=a.timeout, batch_budget_s=budget)
        seconds = time.perf_counter() - t0
        out["budget"] = dict(slow=a.budget_batch, budget_s=budget, timeout_s=a.timeout, seconds=seconds,
                             last_reward=rewards[-1], slow_rewarded=sum(rewards[:-1]), logged=logged)
        print(f"\nbatch budget: math_reward on {a.budget_batch} answers sympy would work on for minutes, then a right one "
              f"(timeout_s={a.timeout}, batch_budget_s={budget:g})")
        print(f"  {seconds:.2f} s for {len(completions)} completions (budget {budget:g} s); the right answer scored "
              f"{rewards[-1]:.0f}; " + ", ".join(f"{k}={v:.3f}" for k, v in sorted(logged.items())))

    if "extraction" in sections:
        from delta_repro.rewards import extract_code
        fns = dict(code=extract_code, boxed=extract_boxed, final=extract_final_answer, choice=extract_choice)
        print("\nextraction on degenerate completions (median seconds; each should be well under 0.05 s)")
        print(f"{'completion':>16} {'chars':>9} " + " ".join(f"{k:>8}" for k in fns))
        out["extraction"] = []
        for name, make in EXTRACTION.items():
            for n in (250_000, 1_000_000):
                text = make(n)
                row = dict(completion=name, chars=len(text), **{k: _time(lambda: f(text), a.repeats) for k, f in fns.items()})
                out["extraction"].append(row)
                print(f"{name:>16} {len(text):>9,} " + " ".join(f"{row[k]:>8.4f}" for k in fns))
        worst = max(out["extraction"], key=lambda r: max(r[k] for k in fns))
        print(f"  slowest: {max(worst[k] for k in fns):.4f} s ({worst['completion']}, {worst['chars']:,} characters)")

    if "sandbox" in sections:
        from delta_repro.rewards import run_tests_sandboxed, sandbox_status
        ok, how = sandbox_status()
        if ok:
            tests = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]
            t = _time(lambda: run_tests_sandboxed("def add(a, b): return a + b", tests), max(a.repeats, 5))
            many = [f"assert add({i}, 1) == {i + 1}" for i in range(1000)]
            t_many = _time(lambda: run_tests_sandboxed("def add(a, b): return a + b", many), a.repeats)
            out["sandbox"] = dict(how=how, two_tests_s=t, thousand_tests_s=t_many)
            print(f"\nsandbox ({how}): {t:.3f} s for a 2-test run, {t_many:.3f} s for 1,000 tests")
            from delta_repro.rewards import code_reward
            comps, ctests, cmodes = code_batch(a.code_batch)
            rus = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_SELF))
            t0, c0 = time.perf_counter(), rus()
            scores = code_reward(comps, ctests, test_mode=cmodes)
            wall, cpu = time.perf_counter() - t0, rus() - c0
            out["sandbox"]["code_batch"] = dict(n=len(comps), seconds=wall, per_second=len(comps) / wall,
                                                trainer_cpu_per_completion_s=cpu / len(comps),
                                                mean_reward=sum(scores) / len(scores))
            print(f"  code_reward on {len(comps)} completions ({len(CODE_KINDS)} styles, half right): {len(comps) / wall:.1f} "
                  f"completions/s, {cpu / len(comps) * 1000:.1f} ms of this process's CPU each, mean reward {sum(scores) / len(scores):.2f}")
            # issue 50: stdio tests whose program writes the most it may (4 MiB a test), 200 tests, every one wrong: the
            # output stays in the sandbox and only a digest crosses, so this process's CPU must stay under 0.1 s
            wide = "import sys\nsys.stdout.write('7 ' * (2 * 1024 * 1024 - 8))\n"
            c0 = rus()
            res = run_tests_sandboxed(wide, [f"__check_io('{i}\\n', '8')" for i in range(200)], mode="stdio", timeout_s=120)
            out["sandbox"]["stdio_worst_case"] = dict(tests=200, output_mib_per_test=4, trainer_cpu_s=rus() - c0,
                                                      passed=res[0], stopped=getattr(res, "stopped", None))
            print(f"  stdio, 200 tests x 4 MiB of output: {rus() - c0:.3f} s of this process's CPU for the completion")
            hostile = {  # replies built to stall the parent, each against a 4-second deadline
                f"set of {a.collision_n:,} ints, one hash": forged_reply_program(collision_reply(a.collision_n)),
                f"dict of {a.collision_n:,} ints, one hash": forged_reply_program(collision_reply(a.collision_n, "dict")),
                "list of 1,200,000 zeros (3.6 MB)": "def add(a, b): return [0] * 1_200_000",
                "list nested 150 deep": forged_reply_program("'[' * 150 + ']' * 150"),
            }
            out["sandbox"]["hostile"] = []
            for name, code in hostile.items():
                t0 = time.perf_counter()
                res = run_tests_sandboxed(code, ["assert add(1, 2) == 3"], timeout_s=4)
                secs = time.perf_counter() - t0
                stopped = getattr(res, "stopped", None)  # SandboxResult.stopped (issue 21); absent before
                out["sandbox"]["hostile"].append(dict(reply=name, passed=res[0], total=res[1], seconds=secs, stopped=stopped))
                print(f"  {name:>32}: {res[0]}/{res[1]} passed in {secs:.2f} s (deadline 4 s)"
                      + (f"; stopped: {stopped}" if stopped else ""))
        else:
            out["sandbox"] = dict(unavailable=how)
            print(f"\nsandbox: not available here ({how})")
    if a.json:
        with open(a.json, "x") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
