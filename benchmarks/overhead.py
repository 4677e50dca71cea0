"""Training-step overhead of DelTA over plain DAPO (paper App. L.1: +10.2 % of the first step on 8×B200).

    python benchmarks/overhead.py                  # tiny (d=64) and ~30M-parameter Qwen3 on CPU
    python benchmarks/overhead.py --sizes 30m --rounds 7
    python benchmarks/overhead.py --device cuda --bf16 --sizes 30m 0.6b-shape 8b-width --rounds 3   # GPU

Targets: at most +3 % when TRL computes old log-probabilities anyway (aligned=False: DelTA reuses that pass) and at
most +15 % otherwise (aligned=True: one extra forward pass). Method: `delta_repro.experiments.measure_step_overhead`
(two trainers differing only in credit_assignment, same weights, data and seed, ABBA order, TRL's step_time of the
first optimizer step, median over rounds). Run on an otherwise idle machine.
"""
import argparse
from pathlib import Path

import torch

from delta_repro.experiments import OVERHEAD_SIZES, measure_step_overhead


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["tiny", "30m"], choices=sorted(OVERHEAD_SIZES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--completion-length", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16, help="completions per generation batch")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--bf16", action="store_true", help="TRL's bf16 mixed precision (GPU; slow on CPU)")
    ap.add_argument("--csv", help="also write the table to this file")
    a = ap.parse_args()
    if a.csv and Path(a.csv).exists(): ap.error(f"--csv {a.csv} exists: earlier results are never overwritten")
    print(f"device={a.device} torch={torch.__version__} threads={torch.get_num_threads()} "
          f"completions/generation={a.batch} completion_length={a.completion_length} rounds={a.rounds} bf16={a.bf16}")
    df = measure_step_overhead(a.sizes, a.rounds, a.completion_length, a.batch, a.device, bf16=a.bf16)
    print(df.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if a.csv:
        df.to_csv(a.csv, index=False, mode="x")


if __name__ == "__main__":
    main()
