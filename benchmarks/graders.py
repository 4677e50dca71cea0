"""Grader timings on degenerate completions of paper length (issue 11), and the code sandbox's cost per run.

    python benchmarks/graders.py                        # each shape at ≈20,480 tokens and at twice that
    python benchmarks/graders.py --scale 4 --json r.json

The paper's completions run to 20,480 tokens, and RL produces degenerate ones (walls of newlines, `\\boxed{` until
the budget ends). For each shape the extractors (`extract_boxed`, `extract_final_answer`, `extract_choice`) and the
whole `grade_math` call are timed at n and 2n characters; the ratio t(2n)/t(n) is about 2 for a linear pass (it was
about 4 before: 40,000 newlines took 22 s, 10,000 `\\boxed{` 15 s). `grade_math` must stay below `--timeout`.
Then `run_tests_sandboxed` is timed on a two-test program (bubblewrap start-up plus a round trip per call).
"""
import argparse
import json
import math
import statistics
import time
from pathlib import Path

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


def _time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="size factor of every shape (1 = about 20,480 tokens)")
    ap.add_argument("--timeout", type=int, default=5, help="grade_math's timeout_s, seconds")
    ap.add_argument("--repeats", type=int, default=3, help="timed repetitions (the median is printed)")
    ap.add_argument("--no-sandbox", action="store_true", help="skip the code sandbox timing")
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()
    if not (math.isfinite(a.scale) and 0 < a.scale <= 100): ap.error(f"--scale must be in (0, 100], got {a.scale}")
    if a.timeout < 1: ap.error(f"--timeout must be >= 1 second, got {a.timeout}")
    if a.repeats < 1: ap.error(f"--repeats must be >= 1, got {a.repeats}")
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    from delta_repro.rewards import (extract_boxed, extract_choice, extract_final_answer, grade_math,
                                     run_tests_sandboxed, sandbox_status)

    grade_math("\\boxed{1}", "1")  # math-verify's first import and compilation are not the grader's cost
    rows = []
    print(f"scale={a.scale} timeout_s={a.timeout} repeats={a.repeats} (median seconds; ratio = t(2n) / t(n))")
    print(f"{'shape':>15} {'chars':>9} {'boxed':>8} {'final':>8} {'choice':>8} {'grade':>8} {'ratio':>6}  at scale 1")
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
        print(f"{name:>15} {one['chars']:>9,} {one['boxed']:>8.4f} {one['final']:>8.4f} {one['choice']:>8.4f} "
              f"{one['grade']:>8.3f} {ratio:>6.2f}  {what}")
        if two["grade"] > a.timeout + 1: print(f"  WARNING: grade_math took {two['grade']:.1f} s > timeout_s={a.timeout}")
    out = dict(scale=a.scale, timeout_s=a.timeout, repeats=a.repeats, shapes=rows)
    if not a.no_sandbox:
        ok, how = sandbox_status()
        if ok:
            tests = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]
            t = _time(lambda: run_tests_sandboxed("def add(a, b): return a + b", tests), max(a.repeats, 5))
            many = [f"assert add({i}, 1) == {i + 1}" for i in range(1000)]
            t_many = _time(lambda: run_tests_sandboxed("def add(a, b): return a + b", many), a.repeats)
            out["sandbox"] = dict(how=how, two_tests_s=t, thousand_tests_s=t_many)
            print(f"sandbox ({how}): {t:.3f} s for a 2-test run, {t_many:.3f} s for 1,000 tests")
        else:
            out["sandbox"] = dict(unavailable=how)
            print(f"sandbox: not available here ({how})")
    if a.json:
        with open(a.json, "x") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
