"""Train (and evaluate) one run of a plan outside Jupyter — the entry point for multi-GPU and multi-node jobs.

    accelerate launch --config_file configs/accelerate/deepspeed_zero3_1x8.yaml scripts/train_run.py \
        --profile paper --run-id "Qwen3-8B-Base__deepmath__DelTA__s0"

`reproduce.sh --profile paper` calls it this way for every run; `--profile gpu1` runs it as one process, training with
--no-eval and then evaluating with --eval-only in a fresh process (the colocated vLLM engine of training still holds
its share of the GPU until the process ends). The cpu and smoke profiles use the notebooks.

A plan whose backbone is warm-started (SFT, the cpu and smoke profiles) needs the warm start in the cache before a
launch of several processes; build it once in one process:

    python scripts/train_run.py --profile cpu --run-id RUN --warm-start-only
"""
import argparse
from pathlib import Path

from delta_repro.experiments import build_backbone, evaluate_run, load_plan, train_run

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--run-id", required=True)
    ap.add_argument("--runs-dir", default=None, help="default: runs/<profile>/runs")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--no-eval", action="store_true", help="train only")
    mode.add_argument("--eval-only", action="store_true", help="evaluate a trained run only")
    mode.add_argument("--warm-start-only", action="store_true",
                      help="build (or find) the run's starting policy in the cache, in this one process, and stop")
    a = ap.parse_args()
    plan = load_plan(ROOT / "configs" / f"{a.profile}.yaml")
    if a.run_id not in plan.runs:
        raise SystemExit(f"--run-id {a.run_id!r} is not in the {a.profile} plan; known: {sorted(plan.runs)[:5]}...")
    runs_dir = a.runs_dir or ROOT / "runs" / a.profile / "runs"
    if a.warm_start_only:
        run = plan.runs[a.run_id]
        model = build_backbone(plan, run.backbone, run.task)[0]
        print(f"starting policy of {a.run_id}: {model.config.name_or_path}")
        return
    import torch.distributed as dist
    if not a.eval_only:
        train_run(plan, a.run_id, runs_dir)
        if dist.is_initialized(): dist.barrier()  # the other processes wait until rank 0 has written the run's files
    if not a.no_eval and (not dist.is_initialized() or dist.get_rank() == 0):
        evaluate_run(plan, a.run_id, runs_dir)
    # every process leaves the group while the interpreter is whole (left to exit, gloo's threads could abort a rank
    # during finalization)
    if dist.is_initialized(): dist.destroy_process_group()


if __name__ == "__main__":
    main()
