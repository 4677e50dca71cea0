"""λ by token class on one rollout batch of a policy: the mechanism read on real language (issue 37, item 6).

    python scripts/lambda_token_classes.py --profile cpu --backbone smollm2-long --run smollm2-long__math__DelTA__s0 \
        --out figures/cpu/smollm2_lambda_token_classes.csv

Draws one graded rollout batch (training prompts of the backbone's task, the profile's rollout temperature and answer
length) from the warm start of `--backbone` and, with `--run`, from that finished run's kept checkpoint
(`runs/<profile>/runs/<run>/best`), computes DelTA's coefficients on it exactly as in training
(`tokens.rollout_batch_coefficients`), and writes the mean λ per token class with 95 % intervals over prompts
(`tokens.token_class_summary`): by position against the other outcome of the same prompt (shared, first divergence,
final answer, after divergence, decisive) and by what the tokens are made of (digits, operators, text). One row per
(policy, grouping, outcome, class) in `--out` (CSV) with a Markdown copy beside it. A SmolLM2 checkpoint (540 MB) is
not archived, so this table is made once, when the run's checkpoint exists, and committed; the script says which
policy and batch it read. Raises SystemExit for a run that has not finished or a backbone not in the plan."""
import argparse
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--run", default=None, help="a finished run of the backbone whose kept checkpoint to read too")
    ap.add_argument("--prompts", type=int, default=32, help="training prompts in the batch (8 completions each)")
    ap.add_argument("--out", required=True, help="the CSV to write (a .md beside it)")
    a = ap.parse_args()
    from delta_repro.experiments import build_backbone, load_plan, prompt_template, reward_functions, task_sets
    from delta_repro.models import load_model
    from delta_repro.reporting import write_table
    from delta_repro.tokens import rollout_batch_coefficients, token_class_summary, token_classes
    from delta_repro.trainer import DeltaGRPOConfig
    plan = load_plan(ROOT / "configs" / f"{a.profile}.yaml")
    if a.backbone not in plan.raw["backbones"]: raise SystemExit(f"--backbone: {a.backbone!r} is not in the plan")
    task = "math"
    policies = {"warm start": build_backbone(plan, a.backbone, task)[:2]}
    if a.run:
        d = ROOT / "runs" / a.profile / "runs" / a.run
        if not (d / "DONE").exists() or not (d / "best").exists():
            raise SystemExit(f"--run: {a.run} has not finished or has no kept checkpoint in {d}")
        meta = json.loads((d / "DONE").read_text())
        policies[f"{plan.runs[a.run].method} seed {plan.runs[a.run].seed}, step {meta['selected_step']}"] = load_model(str(d / "best"))
    train, _, _ = task_sets(plan, task, prompt_template(plan, a.backbone))
    reward = reward_functions(plan, task, DeltaGRPOConfig(output_dir="/tmp/x", use_cpu=True, bf16=False))[0]
    trainer = {**plan.raw["trainer"], **(plan.raw["backbones"][a.backbone].get("trainer") or {})}
    frames = []
    for name, (model, tok) in policies.items():
        batch = rollout_batch_coefficients(model, tok, train.shuffle(seed=2), reward, n_prompts=a.prompts,
                                           n_generations=int(trainer["num_generations"]),
                                           max_new_tokens=int(trainer["max_completion_length"]),
                                           temperature=float(trainer.get("temperature", 1.0)))
        classes = token_classes(batch)
        reward_mean = float(batch["rewards"].float().mean())
        for by in ("class", "kind"):
            s = token_class_summary(classes, by=by).reset_index()
            frames.append(s.assign(policy=name, grouping="position" if by == "class" else "made of",
                                   batch_reward=reward_mean, batch_completions=len(batch["rewards"])))
        print(f"{name}: reward {reward_mean:.3f} over {len(batch['rewards'])} completions, "
              f"{classes['prompt'].nunique()} prompts with both outcomes")
    out = pd.concat(frames).set_index(["policy", "grouping", "outcome", "class"])
    path = Path(a.out)
    write_table(out, path.stem, path.parent, caption=(
        f"λ by token class, {a.backbone} ({a.profile} profile): one rollout batch of {a.prompts} training prompts x "
        f"{trainer['num_generations']} completions per policy, DelTA's coefficients as in training, mean λ with a 95 % "
        "interval over prompts (prompts with both a correct and a wrong completion). 'position': against the other "
        "outcome of the same prompt (decisive = first divergence or final answer); 'made of': digits, operators or "
        "text. Made by scripts/lambda_token_classes.py from checkpoints that are not archived."))
    print(path)


if __name__ == "__main__":
    main()
