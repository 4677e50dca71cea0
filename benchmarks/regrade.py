"""Regrade stored evaluations with today's grader: does any archived grade depend on when it was computed?

    python benchmarks/regrade.py --profile cpu --match smollm2-long      # the SmolLM2 study's runs
    python benchmarks/regrade.py --profile cpu --json r.json             # every math run of the profile

Each run of a profile keeps every completion its evaluations wrote (`runs/<profile>/runs/<run>/eval.csv`, selection
checkpoints, and `eval_final.csv`, the last policy) with the grade given then (`correct`: the strict verifier,
`parseable`, `lenient`: `evaluation.answer_correct`). This script rebuilds each evaluation set from the profile's plan
(`experiments.task_sets`, the same problems by `problem_id`), grades every stored completion again with
`evaluation.grade` and `answer_correct` as they are in this checkout, and counts the completions whose grade changed,
per run and per backbone. A grader change that claims to be inert on a study (issue 40: runs trained before and after
it are compared) is shown so here: zero changed grades on that study's completions.

Math and multiple-choice rows only: code rows are graded by running tests in the sandbox (`code_reward`), which
this script leaves out (their files are skipped and counted). Prints a table; `--json` writes the counts and up to
`--examples` changed completions per run."""
import argparse
import glob
import json
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from delta_repro.evaluation import answer_correct, grade
from delta_repro.experiments import load_plan, task_sets


def _sets(plan, task: str) -> dict:
    "{benchmark: {problem_id: row}} of every evaluation set of a task (selection, held-out and out-of-domain)."
    _, evals, _ = task_sets(plan, task, ood=True)
    return {name: {r["problem_id"]: r for r in ds} for name, ds in evals.items()}


def regrade_file(path: Path, sets: dict, examples: int) -> dict:
    """Counts of stored grades that today's grader gives differently, for one eval CSV: completions, changed
    `correct`, `parseable` and `lenient`, and up to `examples` changed rows (benchmark, problem_id, stored and new
    grades, the completion's last 200 characters). Raises `KeyError` for a problem the plan no longer builds."""
    df = pd.read_csv(path, keep_default_na=False, dtype={"completion": str, "problem_id": str})
    out = Counter(completions=len(df))
    shown = []
    for r in df.itertuples(index=False):
        row = sets[r.benchmark][r.problem_id]
        if row.get("tests"):
            out["code (not regraded)"] += 1
            continue
        ok, parseable = grade(row, r.completion)
        lenient = answer_correct(r.completion, row["answer"])
        stored = tuple(None if getattr(r, k, "") == "" else str(getattr(r, k)) == "True" for k in ("correct", "parseable", "lenient"))
        changed = [k for k, old, new in zip(("correct", "parseable", "lenient"), stored, (ok, parseable, lenient))
                   if old is not None and old != new]  # a column older runs did not store is not compared
        for k in changed: out[k] += 1
        if changed and len(shown) < examples:
            shown.append(dict(benchmark=r.benchmark, problem_id=r.problem_id, stored=stored, new=(ok, parseable, lenient),
                              tail=r.completion[-200:]))
    return dict(counts=dict(out), examples=shown)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu", help="profile name: configs/<profile>.yaml and runs/<profile>/runs")
    ap.add_argument("--match", default="", help="only runs whose id contains this text (e.g. smollm2-long)")
    ap.add_argument("--runs-dir", default=None, help="where the runs are (default runs/<profile>/runs)")
    ap.add_argument("--examples", type=int, default=5, help="changed completions kept per run in --json")
    ap.add_argument("--json", default=None, help="write the counts per run here")
    a = ap.parse_args(argv)
    if a.examples < 0: ap.error(f"--examples must be >= 0, got {a.examples}")
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    if not Path(f"configs/{a.profile}.yaml").is_file(): ap.error(f"--profile: no configs/{a.profile}.yaml")
    plan = load_plan(f"configs/{a.profile}.yaml")
    root = Path(a.runs_dir or f"runs/{a.profile}/runs")
    files = sorted(p for p in map(Path, glob.glob(str(root / "*" / "eval*.csv"))) if a.match in p.parent.name)
    if not files: ap.error(f"--match/--runs-dir: no eval CSVs under {root} for runs matching {a.match!r}")
    cache, report, t0 = {}, {}, time.perf_counter()
    for f in files:
        task = f.parent.name.split("__")[1]
        if task not in plan.raw["tasks"]: raise SystemExit(f"{f}: task {task!r} is not in configs/{a.profile}.yaml")
        if task not in cache: cache[task] = _sets(plan, task)
        report[str(f)] = regrade_file(f, cache[task], a.examples)
    by = {}
    for f, r in report.items():
        b = Path(f).parent.name.split("__")[0]
        by.setdefault(b, Counter()).update(r["counts"])
    keys = ("completions", "correct", "parseable", "lenient", "code (not regraded)")
    print(f"{len(files)} eval files, {time.perf_counter() - t0:.0f} s; completions whose stored grade today's grader changes:")
    print("| backbone | " + " | ".join(keys) + " |\n|---|" + "---:|" * len(keys))
    for b, c in sorted(by.items()): print(f"| {b} | " + " | ".join(f"{c.get(k, 0):,}" for k in keys) + " |")
    for f, r in report.items():
        for e in r["examples"]: print(f"  {f}: {e['benchmark']} {e['problem_id']} stored {e['stored']} now {e['new']}: …{e['tail']!r}")
    if a.json: Path(a.json).write_text(json.dumps(dict(by_backbone={b: dict(c) for b, c in by.items()}, runs=report), indent=1))


if __name__ == "__main__":
    main()
