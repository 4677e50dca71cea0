"""Does this machine rebuild the warm start the archived runs started from? Evaluate the warm start built here
(from the cache, or trained now by `models.warm_start` exactly as a run does) as `experiments.evaluate_warm_start`
does, and compare with the archived warm-start evaluation of the same plan.

    python benchmarks/warm_start_rebuild.py --profile cpu --backbone smollm2-long --task math \
        --out benchmarks/results/cpu-warm-start-rebuild-2026-12-05

Only the weights are kept out of the archive (about 540 MB for SmolLM2), so a run trained on a new machine starts
from a warm start rebuilt there. Its recipe is fixed (the plan's data, steps, learning rate, seed; float32 SFT), but
its floating-point detail depends on the CPU's kernels, and a sampled completion follows every last bit of the
weights. This script says how far the rebuilt warm start is from the archived one, in the terms the study reads: the
share of identical completions (same problem, sample and sampling seed), and the accuracy of both with the
difference paired by problem (`evaluation.paired_difference`, the two sampled completions per problem averaged).

Writes `<out>/warm_start_rebuild.json` and `.md` (per benchmark: identical share, lenient and strict accuracy of each,
the paired difference with its 95 % interval and Wilcoxon p) and prints the table; also records the warm start's
cache directory, the sha256 of its weights and the CPU capability torch dispatches to. Never overwrites an existing
`<out>` file. Refuses (exit 2, naming the argument) a missing profile, backbone, task or archived evaluation.

`--from-backbone B2` reads, instead of evaluating anew (about 20 minutes of a core for SmolLM2), the warm-start
evaluation that `reproduce.sh` made of backbone B2, which must differ from `--backbone` only in its RL trainer
settings (`trainer`), so that both warm-start from the same recipe; the sha256 that B2's runs recorded in their
`DONE` files is written beside it, which ties that evaluation to the weights the runs started from:

    python benchmarks/warm_start_rebuild.py --profile cpu --backbone smollm2-long --task math \
        --from-backbone smollm2-rep --out benchmarks/results/cpu-warm-start-rebuild-2026-12-07"""
import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

# the warm starts reproduce.sh builds and its runs start from (the same absolute path: the cache key holds the base
# model's path, so another spelling of the folder would build the warm start again under another key)
os.environ.setdefault("DELTA_REPRO_CACHE", str(Path(__file__).resolve().parents[1] / "runs" / "cache"))

import pandas as pd

from delta_repro.evaluation import completion_agreement, load_results, paired_difference
from delta_repro.experiments import build_backbone, evaluate_warm_start, load_plan, start_provenance
from delta_repro.scores import warm_start_dir


def per_problem(df: pd.DataFrame, col: str) -> pd.Series:
    "Accuracy (%) of each problem, the mean over its sampled completions, indexed by problem_id."
    return df.groupby("problem_id")[col].mean().astype(float) * 100


def compare(old: pd.DataFrame, new: pd.DataFrame) -> list[dict]:
    "One row per benchmark: identical completions, accuracies of both and the paired difference (new − old)."
    rows = []
    for bench in sorted(set(old["benchmark"]) & set(new["benchmark"])):
        o, n = old[old["benchmark"] == bench], new[new["benchmark"] == bench]
        agree = completion_agreement(o, n)
        row = dict(benchmark=bench, completions=agree["rows"], identical=round(agree["identical"], 4))
        for col in ("lenient", "correct"):
            po, pn = per_problem(o, col), per_problem(n, col)
            po, pn = po.align(pn, join="inner")
            d = paired_difference(pn.values[None, :], po.values[None, :], alternative="two-sided")
            row.update({f"{col}_archived": round(float(po.mean()), 2), f"{col}_rebuilt": round(float(pn.mean()), 2),
                        f"{col}_difference": round(d["effect"], 2),
                        f"{col}_ci95": [round(d["low"], 2), round(d["high"], 2)], f"{col}_p_wilcoxon": round(d["p_wilcoxon"], 4)})
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--backbone", default="smollm2-long")
    ap.add_argument("--task", default="math")
    ap.add_argument("--runs-dir", default=None, help="default: runs/<profile>/runs (reproduce.sh restores the archive there)")
    ap.add_argument("--out", default=None, help="a folder for warm_start_rebuild.json and .md (default: print only)")
    ap.add_argument("--from-backbone", default=None,
                    help="read this backbone's warm-start evaluation (same recipe, other RL settings) instead of evaluating anew")
    a = ap.parse_args()
    if not Path(f"configs/{a.profile}.yaml").is_file(): ap.error(f"--profile: no configs/{a.profile}.yaml")
    plan = load_plan(f"configs/{a.profile}.yaml")
    if a.backbone not in plan.raw["backbones"]: ap.error(f"--backbone: {a.backbone!r} is not in configs/{a.profile}.yaml")
    if a.task not in plan.raw["tasks"]: ap.error(f"--task: {a.task!r} is not in configs/{a.profile}.yaml")
    if a.out and any((Path(a.out) / n).exists() for n in ("warm_start_rebuild.json", "warm_start_rebuild.md")):
        ap.error(f"--out {a.out} holds results already: earlier results are never overwritten")
    if a.from_backbone:  # checked before any file is read
        spec = plan.raw["backbones"].get(a.from_backbone)
        if spec is None: ap.error(f"--from-backbone: {a.from_backbone!r} is not in configs/{a.profile}.yaml")
        if a.from_backbone == a.backbone: ap.error("--from-backbone: it must be another backbone than --backbone")
        mine = plan.raw["backbones"][a.backbone]
        other = sorted(k for k in set(spec) | set(mine) if k != "trainer" and spec.get(k) != mine.get(k))
        if other: ap.error(f"--from-backbone: {a.from_backbone!r} differs from {a.backbone!r} in {other}, not only in "
                           "its RL trainer settings: its warm start may follow another recipe")
    runs = Path(a.runs_dir or f"runs/{a.profile}/runs")
    archived = warm_start_dir(runs, a.backbone, a.task) / "eval.csv"
    if not archived.exists():
        ap.error(f"--runs-dir: no archived warm-start evaluation at {archived} (`python scripts/archive_runs.py "
                 f"--profile {a.profile} --runs-dir {runs} --restore` puts it there)")
    recorded = None
    if a.from_backbone:
        path = warm_start_dir(runs, a.from_backbone, a.task) / "eval.csv"
        if not path.exists(): ap.error(f"--from-backbone: no warm-start evaluation at {path}")
        new = load_results(path)
        shas = set()
        for done in runs.glob(f"{a.from_backbone}__{a.task}__*/DONE"):
            shas.add(json.loads(done.read_text()).get("provenance", {}).get("start_sha256"))
        recorded = dict(evaluation=str(path), runs_start_sha256=sorted(str(x) for x in shas))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            new = load_results(evaluate_warm_start(plan, a.backbone, a.task, tmp))
    # the record a run's DONE keeps (its folder, sha256, torch, CPU capability): loaded from the cache, not retrained
    prov = start_provenance(build_backbone(plan, a.backbone, a.task)[0])
    info = dict(profile=a.profile, backbone=a.backbone, task=a.task, warm_start=prov["start"],
                weights_sha256=prov["start_sha256"], torch=prov["torch"], cpu_capability=prov["cpu_capability"],
                processor=platform.processor() or platform.machine(),
                rows=compare(load_results(archived), new))
    if recorded: info["from_backbone"] = dict(backbone=a.from_backbone, **recorded)
    cols = ["benchmark", "completions", "identical", "lenient_archived", "lenient_rebuilt", "lenient_difference",
            "lenient_ci95", "lenient_p_wilcoxon", "correct_archived", "correct_rebuilt"]
    table = pd.DataFrame(info["rows"])[cols].to_markdown(index=False)
    head = (f"Warm start of {a.backbone} / {a.task} rebuilt on this machine ({info['warm_start']}, weights sha256 "
            f"{str(info['weights_sha256'])[:16]}…, torch {info['torch']}, CPU capability {info['cpu_capability']}) "
            f"against the archived evaluation; differences are rebuilt − archived in points, 95 % interval paired by problem."
            + (f" The rebuilt warm start's evaluation is the one reproduce.sh made for {a.from_backbone} (same recipe), whose runs "
               f"recorded the starting weights {', '.join(x[:16] + '…' for x in recorded['runs_start_sha256'])}." if recorded else ""))
    print(head + "\n\n" + table)
    if a.out:
        out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
        for name, text in (("warm_start_rebuild.json", json.dumps(info, indent=1)), ("warm_start_rebuild.md", head + "\n\n" + table + "\n")):
            with open(out / name, "x") as f: f.write(text)  # "x": a file written meanwhile is not overwritten either


if __name__ == "__main__":
    main()
