"""Calibrate a profile on its baseline only: warm-start length and the RL learning rate, measured on DAPO.

    python scripts/calibrate.py --profile cpu --warm-start-steps 150 200 250      # sampled accuracy of each warm start
    python scripts/calibrate.py --profile cpu --lr 1e-4 2e-4 --seeds 0 --steps 300  # DAPO from the plan's warm start

Everything else comes from `configs/<profile>.yaml`. Runs go to `runs/calibration/<profile>/` (kept: a rerun resumes
or reuses them); one JSON line per measurement is appended to `runs/calibration/<profile>/calibration.jsonl` and
printed. The chosen values, with these numbers, belong in the header of the profile's YAML — shared by every method.
"""
import argparse
import json
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--plan", default=None, help="a plan YAML to calibrate instead of configs/<profile>.yaml (a variant)")
    ap.add_argument("--backbone", default="tiny-qwen3")
    ap.add_argument("--task", default="math")
    ap.add_argument("--warm-start-steps", type=int, nargs="*", default=[])
    ap.add_argument("--lr", type=float, nargs="*", default=[])
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    ap.add_argument("--steps", type=int, default=None, help="RL steps (default: the plan's)")
    ap.add_argument("--k", type=int, default=4, help="samples per problem of the accuracy estimates")
    ap.add_argument("--batch", type=int, default=None, help="per_device_train_batch_size of the RL runs (default: the plan's)")
    ap.add_argument("--ws-lr", type=float, default=None, help="learning rate of the warm start (default: the plan's)")
    ap.add_argument("--ws-batch", type=int, default=None, help="batch size of the warm start (default: the plan's)")
    ap.add_argument("--direct-share", type=float, default=None, help="direct_answer_share of the warm start (default: the plan's)")
    ap.add_argument("--rl-warm-start-steps", type=int, default=None, help="SFT steps of the RL runs' warm start (default: the plan's)")
    ap.add_argument("--select-every", type=int, default=None,
                    help="evaluate the selection set every N RL steps (default: the plan's; runs shorter than the plan's "
                         "interval, e.g. SmolLM2's 16 steps, need it to get any point past step 0)")
    ap.add_argument("--agreement", nargs=2, metavar=("RUN_A", "RUN_B"), default=None,
                    help="two finished run directories (e.g. DAPO seeds 0 and 1 of a calibration): sample both last "
                         "policies on the selection set with one sampling seed and record the share of identical "
                         "completions (evaluation.completion_agreement), the reference for same-seed comparisons")
    a = ap.parse_args(argv)
    for d in a.agreement or []:
        if not (Path(d) / "DONE").exists(): ap.error(f"--agreement: {d} is not a finished run (no DONE)")
    if any(n < 1 for n in a.warm_start_steps): ap.error("--warm-start-steps must be positive")
    if any(not (0 < lr < 1) for lr in a.lr): ap.error("--lr must be in (0, 1)")
    for name in ("steps", "batch", "rl_warm_start_steps", "select_every"):
        if getattr(a, name) is not None and getattr(a, name) < 1: ap.error(f"--{name.replace('_', '-')} must be positive")

    from delta_repro.evaluation import completion_agreement, evaluate, summarize
    from delta_repro.experiments import (Run, build_backbone, load_plan, prompt_template, run_settings, selection_settings,
                                         task_sets, train_run)
    plan_path = Path(a.plan) if a.plan else root / "configs" / f"{a.profile}.yaml"
    plan = load_plan(plan_path)
    if a.backbone not in plan.raw["backbones"]: ap.error(f"--backbone: not in the plan: {a.backbone}")
    out = root / "runs" / "calibration" / (plan_path.stem if a.plan else a.profile)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "calibration.jsonl"

    def record(**kw):
        line = json.dumps(kw)
        print(line, flush=True)
        with log.open("a") as f: f.write(line + "\n")

    select = plan.raw["tasks"][a.task]["select"]
    if a.agreement:
        from delta_repro.experiments import inference_copy
        from delta_repro.models import load_model
        sel = selection_settings(plan.raw, a.backbone)
        _, evals, _ = task_sets(plan, a.task, prompt_template(plan, a.backbone))
        res, t0 = [], time.time()
        for d in a.agreement:
            last = Path(d) / "final" if (Path(d) / "final").exists() else Path(d) / "best"  # the last policy
            model, tok = load_model(str(last))
            res.append(evaluate(inference_copy(model, sel.get("dtype")), tok, {select: evals[select]}, k=a.k,
                                max_new_tokens=int(sel.get("max_new_tokens", 64)), batch_size=int(sel.get("batch_size", 32)),
                                seed=0, engine="transformers", progress=False))
        agree = completion_agreement(*res)
        record(kind="agreement", backbone=a.backbone, runs=[str(Path(d).name) for d in a.agreement],
               policies="last", set=select, k=a.k, sampling_seed=0, identical_share=agree["identical"],
               same_correctness_share=agree["same_correctness"], rows=agree["rows"],
               accuracy=[float(summarize(r).loc[select, "lenient_accuracy"]) for r in res],
               seconds=round(time.time() - t0, 1))
        return 0
    ws_spec = plan.raw["backbones"][a.backbone]["warm_start"]
    if a.ws_lr: ws_spec["learning_rate"] = a.ws_lr
    if a.ws_batch: ws_spec["batch_size"] = a.ws_batch
    if a.direct_share is not None: ws_spec["direct_answer_share"] = a.direct_share
    for n in a.warm_start_steps:
        plan.raw["backbones"][a.backbone]["warm_start"]["max_steps"] = n
        t0 = time.time()
        model, tok, template = build_backbone(plan, a.backbone, a.task)
        _, evals, _ = task_sets(plan, a.task, template)
        res = evaluate(model, tok, {select: evals[select]}, k=a.k, max_new_tokens=plan.raw["trainer"]["max_completion_length"],
                       seed=0, progress=False)
        s = summarize(res).loc[select]
        solved = res.groupby("problem_id")["lenient"].any().mean()
        record(kind="warm_start", backbone=a.backbone, sft_steps=n, sft_lr=ws_spec["learning_rate"], sft_batch=ws_spec["batch_size"],
               direct_answer_share=ws_spec.get("direct_answer_share", 0.0), set=select,
               accuracy=float(s["lenient_accuracy"]), strict_accuracy=float(s["accuracy"]), pass_at_k=float(solved), k=a.k,
               worked_share=float(res["completion"].str.contains("=").mean()),
               worked_accuracy=float(res[res["completion"].str.contains("=")]["lenient"].mean()),
               seconds=round(time.time() - t0, 1))
    ws = plan.raw["backbones"][a.backbone]["warm_start"]
    ws["max_steps"] = a.rl_warm_start_steps or load_plan(plan_path).raw["backbones"][a.backbone]["warm_start"]["max_steps"]
    # the flags go into the backbone's own overrides, which win over the plan's blocks (run_settings,
    # selection_settings): set on the plan's blocks they would be silently undone by, e.g., SmolLM2's trainer overrides
    bb = plan.raw["backbones"][a.backbone]
    bb["trainer"], bb["selection"] = dict(bb.get("trainer") or {}), dict(bb.get("selection") or {})
    if a.batch: bb["trainer"]["per_device_train_batch_size"] = a.batch
    if a.select_every: bb["selection"]["every"] = a.select_every
    for lr in a.lr:
        bb["trainer"]["learning_rate"] = lr
        for seed in a.seeds:
            run = Run("DAPO", a.backbone, a.task, seed, a.steps or plan.raw["steps"])
            rid = run.run_id
            plan.runs[rid] = run
            kw = run_settings(plan, run)  # what the run trains with, overrides included
            batch = kw["per_device_train_batch_size"]
            d = out / (f"ws{ws['max_steps']}-{ws['learning_rate']:g}-{ws['batch_size']}-d{ws.get('direct_answer_share', 0):g}"
                       f"-b{batch}-lr{lr:g}-steps{run.steps}" + (f"-sel{a.select_every}" if a.select_every else ""))
            t0 = time.time()
            train_run(plan, rid, d)  # calibration reads the selection set only: the reported sets stay unseen
            meta = json.loads((d / rid / "DONE").read_text())
            rewards = [h["reward"] for h in json.loads((d / rid / "log_history.json").read_text()) if "reward" in h]
            head, tail = rewards[: max(1, len(rewards) // 10)], rewards[-max(1, len(rewards) // 10):]
            record(kind="rl", method="DAPO", backbone=a.backbone, warm_start_steps=ws["max_steps"],
                   sft_lr=ws["learning_rate"], sft_batch=ws["batch_size"], batch=batch,
                   num_generations=kw["num_generations"], steps_per_generation=kw["steps_per_generation"],
                   max_completion_length=kw["max_completion_length"], selection_settings=selection_settings(plan.raw, a.backbone),
                   backbone_trainer=bb["trainer"],  # what the backbone sets beyond the plan (e.g. bf16, checkpointing)
                   lr=kw["learning_rate"], seed=seed, steps=run.steps,
                   train_reward_first10pct=sum(head) / len(head), train_reward_last10pct=sum(tail) / len(tail),
                   direct_answer_share=ws.get("direct_answer_share", 0.0), set=select,
                   selection=meta["selection"], selected_step=meta["selected_step"],
                   seconds=round(time.time() - t0, 1))


if __name__ == "__main__":
    sys.exit(main())
