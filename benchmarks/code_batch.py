"""Parallel grading of a code rollout batch (issue 27, item 5): completions per second and the worst case.

    nice -n 19 python benchmarks/code_batch.py                        # 64 ordinary, then 256 hostile completions
    nice -n 19 python benchmarks/code_batch.py --hostile 32 --budget 20 --json r.json   # a quicker look

Two batches go through `code_reward` exactly as the trainer calls it (`CODE_WORKERS` sandboxes at once, each
completion within `--timeout` seconds, the whole batch within `--budget` seconds):
1. ordinary: right and wrong `add` programs in fenced blocks (half of each), four unit tests apiece;
2. hostile: `--hostile` completions cycling through programs that hold their sandbox as long as they can (sleep,
   a busy loop at load and in the call, a fork bomb, 14 sleeping threads, 900 MB of memory, a reply over the size
   cap, a degenerate unclosed fence of 400,000 dashes, a stdio program that never reads its input).
For each: wall seconds, completions per second, the mean reward and what `code_reward` logged. Sequential grading
cost up to 10 s per hostile completion (256 of them: about 43 minutes); the budget bounds the batch.
"""
import argparse
import json
import os
import time
from pathlib import Path

ADD_TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(0, 0) == 0", "assert add(10, 5) == 15"]
HOSTILE = {  # name: (completion, tests, mode)
    "sleep": ("import time\ntime.sleep(1000)", ADD_TESTS, "functional"),
    "busy_at_load": ("while True: pass", ADD_TESTS, "functional"),
    "busy_in_call": ("def add(a, b):\n    while True: pass", ADD_TESTS, "functional"),
    "fork_bomb": ("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", ADD_TESTS, "functional"),
    "thread_hog": ("import threading, time\nfor _ in range(14):\n    threading.Thread(target=time.sleep, args=(99,)).start()\n"
                   "def add(a, b):\n    time.sleep(99)", ADD_TESTS, "functional"),
    "memory": ("x = bytearray(900 << 20)\nimport time\ndef add(a, b):\n    time.sleep(99)", ADD_TESTS, "functional"),
    "reply_over_cap": ("def add(a, b):\n    return 'x' * (5 << 20)", ADD_TESTS, "functional"),
    "degenerate_fence": ("```python\n" + "\n" * 4_000 + "-" * 400_000, ADD_TESTS, "functional"),
    "stdio_never_reads": ("import time\ntime.sleep(1000)", ['__check_io("1 2", "3")'] * 50, "stdio"),
}


def ordinary_batch(n: int):
    right = "```python\ndef add(a, b):\n    return a + b\n```"
    wrong = "```python\ndef add(a, b):\n    return a - b\n```"
    return [right if i % 2 else wrong for i in range(n)], [ADD_TESTS] * n, ["functional"] * n


def hostile_batch(n: int):
    kinds = list(HOSTILE.values())
    rows = [kinds[i % len(kinds)] for i in range(n)]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _grade(code_reward, batch, **kw) -> dict:
    completions, tests, modes = batch
    logged = {}
    t0 = time.perf_counter()
    rewards = code_reward(completions, tests, test_mode=modes, log_metric=logged.__setitem__, **kw)
    seconds = time.perf_counter() - t0
    return dict(n=len(completions), seconds=seconds, per_second=len(completions) / seconds,
                mean_reward=sum(rewards) / len(rewards), logged=logged)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ordinary", type=int, default=64, help="ordinary completions (right and wrong add programs)")
    ap.add_argument("--hostile", type=int, default=256, help="hostile completions")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per completion (default: CODE_TIMEOUT_S)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per batch (default: CODE_BATCH_BUDGET_S)")
    ap.add_argument("--workers", type=int, default=None, help="sandboxes at once (default: CODE_WORKERS)")
    ap.add_argument("--json", help="also write the results to this file (never overwritten)")
    a = ap.parse_args()
    if a.ordinary < 1 or a.hostile < 0: ap.error("--ordinary must be >= 1 and --hostile >= 0")
    for name in ("timeout", "budget"):
        v = getattr(a, name)
        if v is not None and not v > 0: ap.error(f"--{name} must be a positive number of seconds, got {v}")
    if a.workers is not None and a.workers < 1: ap.error(f"--workers must be >= 1, got {a.workers}")
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    from delta_repro import rewards
    from delta_repro.rewards import code_reward, sandbox_status
    ok, how = sandbox_status()
    if not ok: raise SystemExit(f"the sandbox is not available here: {how}")
    kw = dict(timeout_s=a.timeout or rewards.CODE_TIMEOUT_S, batch_budget_s=a.budget or rewards.CODE_BATCH_BUDGET_S,
              workers=a.workers or rewards.CODE_WORKERS)
    print(f"sandbox: {how}; {os.cpu_count()} cores; timeout_s={kw['timeout_s']} batch_budget_s={kw['batch_budget_s']} "
          f"workers={kw['workers']}")
    out = dict(cores=os.cpu_count(), **kw)
    out["ordinary"] = r = _grade(code_reward, ordinary_batch(a.ordinary), **kw)
    print(f"  ordinary: {r['n']} completions in {r['seconds']:.2f} s = {r['per_second']:.1f} per second "
          f"(mean reward {r['mean_reward']:.2f}; logged {r['logged']})")
    if a.hostile:
        out["hostile"] = r = _grade(code_reward, hostile_batch(a.hostile), **kw)
        print(f"   hostile: {r['n']} completions ({', '.join(HOSTILE)}) in {r['seconds']:.1f} s = "
              f"{r['per_second']:.2f} per second (mean reward {r['mean_reward']:.2f}; logged "
              + ", ".join(f"{k}={v:.3f}" for k, v in sorted(r["logged"].items())) + ")")
        print(f"   worst case for the batch: {r['seconds']:.1f} s (budget {kw['batch_budget_s']} s; sequential: up to "
              f"{r['n'] * kw['timeout_s'] / 60:.0f} min)")
    if a.json:
        with open(a.json, "x") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
