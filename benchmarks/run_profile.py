"""Where one run of a profile spends its time: generation, grading, log-prob passes (the old-policy pass that also
yields DelTA's proxies), DelTA's coefficients, the policy updates, checkpoint selection and the final evaluation.

    python benchmarks/run_profile.py [--profile cpu] [--run-id tiny-qwen3__math__DAPO__s0] [--steps 16]

Trains the run for `--steps` optimizer steps (selection every `--steps // 2`) into a temporary directory with timers
wrapped around the trainer's own methods, then evaluates it exactly as `reproduce.sh` does, and prints each phase's
seconds and share, plus the extrapolation to the profile's full run (phases scale with the steps; the final
evaluation does not). Uses the warm-start cache like a real run (the first call trains the warm start, timed apart).
Nothing here changes the numerics of a run: the wrappers only read the clock."""
import argparse, dataclasses, functools, json, tempfile, time
from collections import defaultdict
from pathlib import Path

from delta_repro import experiments
from delta_repro.trainer import DeltaGRPOTrainer

spent, where = defaultdict(float), []


def timed(owner, name, label):
    fn = getattr(owner, name)
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        t0 = time.perf_counter()
        where.append(label)
        try: return fn(*a, **kw)
        finally:
            where.pop()
            dt = time.perf_counter() - t0
            key = label if label != "log-prob" else ("log-prob (old policy, proxies)" if "score" in where else "update (forward)")
            spent[key] += dt
            if where: spent[f"-{where[-1]}"] += dt  # exclusive time: subtracted from the enclosing phase
    setattr(owner, name, wrapper)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--run-id", default="tiny-qwen3__math__DAPO__s0")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    a = ap.parse_args()
    plan = experiments.load_plan(f"configs/{a.profile}.yaml")
    run = plan.runs[a.run_id]
    t0 = time.perf_counter(); experiments.build_backbone(plan, run.backbone, run.task); warm = time.perf_counter() - t0
    full_steps, sel_every = run.steps, int(plan.raw["selection"].get("every", 0))
    plan.runs[a.run_id] = dataclasses.replace(run, steps=a.steps)
    plan.raw["selection"]["every"] = max(1, a.steps // 2)
    timed(DeltaGRPOTrainer, "_generate_and_score_completions", "score")
    timed(DeltaGRPOTrainer, "_generate", "generation")
    timed(DeltaGRPOTrainer, "_calculate_rewards", "grading")
    timed(DeltaGRPOTrainer, "_get_per_token_logps_and_entropies", "log-prob")
    for name in ("_streaming_coefficients", "_host_coefficients"):
        if hasattr(DeltaGRPOTrainer, name): timed(DeltaGRPOTrainer, name, "DelTA coefficients")
    timed(DeltaGRPOTrainer, "training_step", "step")
    timed(DeltaGRPOTrainer, "_save_checkpoint", "checkpoints")
    first = DeltaGRPOTrainer.training_step
    def mark(self, *a, **kw):  # the clock at the first optimizer step: what comes before is set-up, paid once
        if "first_step_at" not in spent: spent["first_step_at"], spent["selection_before"] = time.perf_counter(), spent["selection"]
        return first(self, *a, **kw)
    DeltaGRPOTrainer.training_step = mark
    timed(experiments.SelectionCallback, "_accuracy", "selection")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter(); experiments.train_run(plan, a.run_id, d); train = time.perf_counter() - t0
        setup = spent["first_step_at"] - t0 - spent["selection_before"]
        t0 = time.perf_counter(); experiments.evaluate_run(plan, a.run_id, d); final_eval = time.perf_counter() - t0
    score = spent["score"] - spent["-score"]
    step = spent["step"] - spent["-step"]  # loss and backward; the rollout and the forward pass are timed on their own
    phases = {"generation": spent["generation"], "grading": spent["grading"],
              "log-prob (old policy, proxies)": spent["log-prob (old policy, proxies)"],
              "DelTA coefficients": spent["DelTA coefficients"], "rollout bookkeeping (advantages, DelTA coefficients)": score,
              "update (forward)": spent["update (forward)"], "update (loss, backward)": step,
              "selection": spent["selection"], "checkpoints (for resuming)": spent["checkpoints"]}
    phases["other (optimizer step, logging)"] = train - setup - sum(phases.values())
    phases["set-up (data, model, trainer)"] = setup
    n_sel = a.steps // max(1, a.steps // 2) + 1
    scale = {k: full_steps / a.steps for k in phases}
    if sel_every:
        scale["selection"] = (full_steps // sel_every + 1) / n_sel
        scale["checkpoints (for resuming)"] = (full_steps // sel_every) / max(1, a.steps // max(1, a.steps // 2))
    scale["set-up (data, model, trainer)"] = 1.0
    full = {k: v * scale[k] for k, v in phases.items()} | {"final evaluation": final_eval}
    total = sum(full.values())
    print(f"{a.profile} / {a.run_id}: {a.steps} steps measured in {train:.1f} s (+ warm start {warm:.1f} s, cached after the first run)")
    print(f"{'phase':46} {'measured s':>10} {'full run s':>10} {'share':>6}")
    for k, v in full.items():
        print(f"{k:46} {phases.get(k, v):10.1f} {v:10.1f} {100 * v / total:5.1f}%")
    print(f"{'total (one run, ' + str(full_steps) + ' steps)':46} {'':10} {total:10.1f}")
    if a.out: Path(a.out).write_text(json.dumps(dict(profile=a.profile, run_id=a.run_id, steps=a.steps, measured=phases,
                                                       full_run=full, warm_start_s=warm), indent=1))


if __name__ == "__main__":
    main()
