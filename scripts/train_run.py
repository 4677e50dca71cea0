"""Train (and evaluate) one run of a plan outside Jupyter — the entry point for multi-GPU and multi-node jobs.

    accelerate launch --config_file configs/accelerate/deepspeed_zero3_1x8.yaml scripts/train_run.py \
        --profile paper --run-id "Qwen3-8B-Base__deepmath__DelTA__s0"

`reproduce.sh --profile paper` calls it this way for every run; `--profile gpu1` runs it as one process, training with
--no-eval and then evaluating with --eval-only in a fresh process (the colocated vLLM engine of training still holds
its share of the GPU until the process ends). The cpu and smoke profiles use the notebooks.
"""
import argparse
from pathlib import Path

from delta_repro.experiments import evaluate_run, load_plan, train_run

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--run-id", required=True)
    ap.add_argument("--runs-dir", default=None, help="default: runs/<profile>/runs")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--no-eval", action="store_true", help="train only")
    mode.add_argument("--eval-only", action="store_true", help="evaluate a trained run only")
    a = ap.parse_args()
    plan = load_plan(ROOT / "configs" / f"{a.profile}.yaml")
    if a.run_id not in plan.runs:
        raise SystemExit(f"--run-id {a.run_id!r} is not in the {a.profile} plan; known: {sorted(plan.runs)[:5]}...")
    runs_dir = a.runs_dir or ROOT / "runs" / a.profile / "runs"
    if not a.eval_only:
        train_run(plan, a.run_id, runs_dir)
    if not a.no_eval:
        import torch.distributed as dist
        if not dist.is_initialized() or dist.get_rank() == 0:
            evaluate_run(plan, a.run_id, runs_dir)


if __name__ == "__main__":
    main()
