"""A SmolLM2 run's two costs, the float32 path against the bf16 path, side by side in one process (issue 37).

    python benchmarks/smollm2_speed.py [--steps 4] [--problems 128] [--out DIR]

Paths (the same warm start, seed, prompts and settings; only precision, gradient checkpointing and generation batch
differ):
  * old: what the cpu profile's `smollm2` backbone runs: float32 training with TRL's default gradient checkpointing;
    evaluation samples from the float32 policy, 256 sequences per `generate` call;
  * bf16 only (RL steps): TRL's bf16 (autocast over float32 master weights, on this CPU's AVX512-BF16), checkpointing on;
  * new: the `smollm2-long` backbone: bf16 and no gradient checkpointing (the same gradients, without recomputing the
    forward pass; memory is no constraint at this size); evaluation samples from a bf16 copy of the policy
    (`experiments.inference_copy`), 64 sequences per call.

Measures, in this order, old then new each time:
  1. RL steps: `--steps` optimizer steps of DAPO seed 0 (one rollout batch of 64 completions is 4 steps) with timers
     around TRL's generation, the old-policy log-prob pass and the updates (as benchmarks/run_profile.py);
  2. held-out evaluation: avg@1 of the warm start on the first `--problems` held-out problems, seconds per completion
     and the extrapolation to the 1,088 completions of one evaluation (1,024 held-out + 64 selection problems);
  3. precision: on one rollout batch of the warm start (completions sampled once, in float32), the old-policy
     log-probs, DelTA's normalised weights λ̄ (Eq. 7, paper defaults) and the DAPO loss of the first micro-batch of 16
     with those weights, computed in float32 and under bf16 autocast; prints the largest and mean differences.
Writes `timing.json`, `timing.md` and `precision.json` to `--out` when given. The runs go to a temporary directory."""
import argparse
import dataclasses
import json
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import run_profile as rp  # noqa: E402  (its timers only read the clock)

from delta_repro import experiments  # noqa: E402
from delta_repro.trainer import DeltaGRPOTrainer  # noqa: E402

PATHS = {"old": dict(bf16=False, gradient_checkpointing=True, dtype=None, eval_batch=256),
         "bf16 only": dict(bf16=True, gradient_checkpointing=True, dtype="bfloat16", eval_batch=256),
         "new": dict(bf16=True, gradient_checkpointing=False, dtype="bfloat16", eval_batch=64)}
COMPLETIONS_PER_EVAL = 1024 + 64


def plan_for(path: str, steps: int):
    plan = experiments.load_plan("configs/cpu.yaml")
    bb = plan.raw["backbones"]["smollm2-long"]
    bb["trainer"] = dict(bb["trainer"], bf16=PATHS[path]["bf16"], gradient_checkpointing=PATHS[path]["gradient_checkpointing"])
    bb["selection"] = {"every": 0}  # no selection inside the timed steps
    bb["evaluation"] = dict(bb["evaluation"], dtype=PATHS[path]["dtype"], batch_size=PATHS[path]["eval_batch"])
    run = experiments.Run("DAPO", "smollm2-long", "math", 0, steps)
    plan.runs[run.run_id] = run
    return plan, run


def rl_steps(path: str, steps: int) -> dict:
    plan, run = plan_for(path, steps)
    rp.spent.clear()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        out = experiments.train_run(plan, run.run_id, d)
        total = time.perf_counter() - t0
        logs = json.loads((out / "log_history.json").read_text())
    s = rp.spent
    phases = {"generation (rollouts)": s["generation"], "old-policy log-probs": s["log-prob (old policy, proxies)"],
              "update forward": s["update (forward)"], "update loss and backward": s["step"] - s["-step"]}
    phases["other (rewards, optimizer, set-up)"] = total - sum(phases.values())
    return dict(seconds=total, per_step=total / steps, phases=phases,
                mean_completion_tokens=[l["completions/mean_length"] for l in logs if "completions/mean_length" in l])


def held_out(path: str, problems: int) -> dict:
    plan, run = plan_for(path, 1)
    model, tok, template = experiments.build_backbone(plan, "smollm2-long", "math")
    _, evals, _ = experiments.task_sets(plan, "math", template)
    ds = evals["chain_sum-heldout"].select(range(problems))
    e = experiments.eval_settings(plan, run)
    t0 = time.perf_counter()
    res = experiments._avg_at_k(model, tok, {"chain_sum-heldout": ds}, e, 0, run_id="bench", method="warm start")
    dt = time.perf_counter() - t0
    return dict(seconds=dt, completions=len(res), per_completion=dt / len(res),
                one_evaluation=dt / len(res) * COMPLETIONS_PER_EVAL, lenient_accuracy=100 * float(res["lenient"].mean()),
                batch_size=int(e["batch_size"]), dtype=e.get("dtype") or "float32")


def precision() -> dict:
    from delta_repro.coefficients import DeltaConfig, delta_coefficients
    from delta_repro.proxies import lm_head_proxy
    plan, run = plan_for("old", 1)
    model, tok, template = experiments.build_backbone(plan, "smollm2-long", "math")
    train, _, _ = experiments.task_sets(plan, "math", template)
    kw = experiments.run_settings(plan, run)
    args = experiments.DeltaGRPOConfig(output_dir=tempfile.mkdtemp(), seed=0, max_steps=1, report_to="none",
                                       use_cpu=True, disable_tqdm=True, **kw)
    tr = DeltaGRPOTrainer(model=model, reward_funcs=experiments.reward_functions(plan, "math", args), args=args,
                          train_dataset=train, processing_class=tok)
    torch.manual_seed(0)
    g = kw["num_generations"]
    inputs = [train[i] for i in range(kw["per_device_train_batch_size"] * kw["steps_per_generation"] // g) for _ in range(g)]
    tr.model.train()
    with torch.no_grad():
        out = tr._generate_and_score_completions(inputs)  # float32 rollouts: the completions both readings share
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    attn = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    T, mask, adv = out["completion_ids"].size(1), out["completion_mask"], out["advantages"]
    read = {}
    for name, ctx in (("float32", nullcontext), ("bf16 autocast", lambda: torch.autocast("cpu", dtype=torch.bfloat16))):
        cap = {}
        tr._capture = cap
        try:
            with torch.no_grad(), ctx():
                tr._get_per_token_logps_and_entropies(tr.model, ids, attn, T, batch_size=16)
        finally:
            tr._capture = None
        hidden = cap["hidden"].float()
        coefs = delta_coefficients(lm_head_proxy(hidden, cap["logps"].float()), adv, mask, DeltaConfig())
        read[name] = dict(logps=cap["logps"].float(), weights=coefs.weights.float())
    base = read["float32"]
    micro = {k: (v[:16] if torch.is_tensor(v) and v.ndim >= 1 and v.shape[0] == ids.shape[0] else v) for k, v in out.items()}
    micro["old_per_token_logps"] = base["logps"][:16]
    losses = {}
    tr.current_gradient_accumulation_steps = args.gradient_accumulation_steps  # set by Trainer.train() in a real run
    for name, ctx in (("float32", nullcontext), ("bf16 autocast", lambda: torch.autocast("cpu", dtype=torch.bfloat16))):
        inp = dict(micro, advantages=adv[:16, None] * read[name]["weights"][:16])
        with torch.no_grad(), ctx():
            losses[name] = float(tr._compute_loss(tr.model, inp))
    m = mask.bool()
    lp = (read["bf16 autocast"]["logps"] - base["logps"])[m].abs()
    w = (read["bf16 autocast"]["weights"] - base["weights"])[m].abs()
    return dict(tokens=int(m.sum()), completions=int(ids.shape[0]), nonzero_advantage_share=float(adv.ne(0).float().mean()),
                logp_max_abs_diff=float(lp.max()), logp_mean_abs_diff=float(lp.mean()),
                lambda_bar_max_abs_diff=float(w.max()), lambda_bar_mean_abs_diff=float(w.mean()),
                lambda_bar_share_over_1e2=float((w > 1e-2).float().mean()),
                loss_float32=losses["float32"], loss_bf16=losses["bf16 autocast"],
                loss_abs_diff=abs(losses["float32"] - losses["bf16 autocast"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per path (4 = one rollout batch)")
    ap.add_argument("--problems", type=int, default=128, help="held-out problems per path (avg@1)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["rl", "eval", "precision"])
    ap.add_argument("--paths", nargs="*", default=list(PATHS), choices=list(PATHS),
                    help="RL paths to time (default: all; one path alone, e.g. to pair two with farm-bench)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.steps < 1: ap.error(f"--steps must be positive, got {a.steps}")
    if a.problems < 1: ap.error(f"--problems must be positive, got {a.problems}")
    if a.out and any((Path(a.out) / f).exists() for f in ("timing.json", "timing.md", "precision.json")):
        ap.error(f"--out {a.out} already holds results: they are never overwritten; name a new directory")
    rp.timed(DeltaGRPOTrainer, "_generate", "generation")
    rp.timed(DeltaGRPOTrainer, "_get_per_token_logps_and_entropies", "log-prob")
    rp.timed(DeltaGRPOTrainer, "_generate_and_score_completions", "score")
    rp.timed(DeltaGRPOTrainer, "training_step", "step")
    res = {"threads": torch.get_num_threads(), "steps": a.steps, "problems": a.problems}
    if "rl" not in a.skip: res["rl"] = {p: rl_steps(p, a.steps) for p in a.paths}
    if "eval" not in a.skip: res["eval"] = {p: held_out(p, a.problems) for p in ("old", "new")}
    lines = ["| measure | old: float32, checkpointing | bf16, checkpointing | new: bf16, no checkpointing | new / old |",
             "|---|---|---|---|---|"]
    if "rl" in res and set(res["rl"]) != set(PATHS):  # some paths only: one line each
        for p, r in res["rl"].items(): lines.append(f"| RL step, s ({a.steps} steps), {p} path alone | {r['per_step']:.1f} | | | |")
    elif "rl" in res:
        o, m, n = (res["rl"][p] for p in PATHS)
        lines.append(f"| RL step, s ({a.steps} steps) | {o['per_step']:.1f} | {m['per_step']:.1f} | {n['per_step']:.1f} | "
                     f"{n['per_step'] / o['per_step']:.2f} |")
        for k in o["phases"]:
            lines.append(f"| — {k}, s | {o['phases'][k]:.1f} | {m['phases'][k]:.1f} | {n['phases'][k]:.1f} | "
                         f"{n['phases'][k] / o['phases'][k] if o['phases'][k] > 0 else float('nan'):.2f} |")
    if "eval" in res:
        o, n = res["eval"]["old"], res["eval"]["new"]
        lines.append(f"| held-out evaluation, s per completion (float32 batch {o['batch_size']}; bf16 copy batch "
                     f"{n['batch_size']}) | {o['per_completion']:.3f} | | {n['per_completion']:.3f} | "
                     f"{n['per_completion'] / o['per_completion']:.2f} |")
        lines.append(f"| — one evaluation ({COMPLETIONS_PER_EVAL} completions), min | {o['one_evaluation'] / 60:.1f} | | "
                     f"{n['one_evaluation'] / 60:.1f} | |")
        lines.append(f"| — lenient avg@1 of the warm start on these problems, % | {o['lenient_accuracy']:.1f} | | "
                     f"{n['lenient_accuracy']:.1f} | |")
    print("\n".join(lines))
    if "precision" not in a.skip:
        res["precision"] = precision()
        print(json.dumps(res["precision"], indent=1))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "timing.json").write_text(json.dumps({k: v for k, v in res.items() if k != "precision"}, indent=1))
        (out / "timing.md").write_text("\n".join(lines) + "\n")
        if "precision" in res: (out / "precision.json").write_text(json.dumps(res["precision"], indent=1))


if __name__ == "__main__":
    main()
