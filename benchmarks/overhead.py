"""Training-step overhead of DelTA over plain DAPO (paper App. L.1: +10.2 % of the first step on 8×B200).

    python benchmarks/overhead.py                 # tiny (d=64) and ~30M-parameter Qwen3 on CPU
    python benchmarks/overhead.py --sizes 30m --rounds 4 --device cuda

Two trainers that differ only in `credit_assignment` ("none" vs "delta") run the same data with the same seed,
starting each round from the same weights, in alternating ABBA order so that drift in machine speed cancels. The
figure is TRL's own `step_time` metric of the first optimizer step (the whole step: generation, scoring,
old-log-prob pass, coefficients, loss, backward, optimizer — on identical weights and completions for both methods,
like the paper's first-step figure), median over rounds. Run it on an otherwise idle machine. Two settings:
  * aligned=False: steps_per_generation (2) > gradient_accumulation_steps (1), so TRL computes old log-probs anyway
    and DelTA takes its proxies from that pass (target: at most +3 %);
  * aligned=True: steps_per_generation = 1, TRL skips that pass and DelTA adds one forward pass (target: +15 %).
"""
import argparse
import copy
import statistics
import tempfile
import time

import torch
from datasets import Dataset
from transformers import PrinterCallback, set_seed

from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer

SIZES = {"tiny": dict(hidden_size=64, num_layers=2, num_heads=4),
         "30m": dict(hidden_size=512, num_layers=8, num_heads=8)}


def reward(completions, answer, **kw):
    return [float(c.count(a[-1])) + 0.01 * len(c) for c, a in zip(completions, answer)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["tiny", "30m"], choices=sorted(SIZES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1, help="optimizer steps per run; only the first (identical weights "
                    "and completions for both methods) is timed")
    ap.add_argument("--completion-length", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16, help="completions per generation batch")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    pairs = [(x, y) for x in range(30) for y in range(30)]
    tok = train_bpe_tokenizer([f"{x} + {y} = {x + y}" for x, y in pairs], vocab_size=400)
    ds = Dataset.from_list([{"prompt": f"{x} + {y} =", "answer": str(x + y)} for x, y in pairs])
    print(f"device={a.device} torch={torch.__version__} threads={torch.get_num_threads()} "
          f"completions/generation={a.batch} completion_length={a.completion_length}")
    print(f"{'model':>6} {'params':>8} {'aligned':>8} {'DAPO s/step':>12} {'DelTA s/step':>13} {'ratio':>7} {'coef s':>8}")
    for size in a.sizes:
        base_model = tiny_causal_lm(tok, "qwen3", **SIZES[size]).to(a.device)
        init = copy.deepcopy(base_model.state_dict())
        n_params = sum(p.numel() for p in base_model.parameters())
        for aligned in (False, True):
            spg = 1 if aligned else 2
            trainers = {}
            for ca in ("none", "delta"):
                args = DeltaGRPOConfig(
                    output_dir=tempfile.mkdtemp(), credit_assignment=ca, per_device_train_batch_size=a.batch // spg,
                    num_generations=4, steps_per_generation=spg, gradient_accumulation_steps=1,
                    max_completion_length=a.completion_length, max_steps=a.steps,
                    logging_steps=1, report_to="none", save_strategy="no", learning_rate=1e-4, seed=0, bf16=False,
                    use_cpu=a.device == "cpu", disable_tqdm=True, loss_type="dapo", epsilon_high=0.28, delta=10.0)
                trainers[ca] = DeltaGRPOTrainer(model=base_model, reward_funcs=reward, args=args, train_dataset=ds,
                                                processing_class=tok)
                trainers[ca].remove_callback(PrinterCallback)
            times = {"none": [], "delta": []}
            coef, lengths = [], {"none": [], "delta": []}
            for r in range(a.rounds):
                for ca in (("none", "delta") if r % 2 == 0 else ("delta", "none")):
                    base_model.load_state_dict(init)
                    set_seed(0)  # same weights, same RNG: both methods sample the same completions
                    tr = trainers[ca]
                    tr.state.log_history.clear()
                    tr.train()
                    steps = [l["step_time"] for l in tr.state.log_history if "step_time" in l]
                    times[ca].append(steps[0])  # the first step: same weights and completions for both methods
                    lengths[ca].append([l["completions/mean_length"] for l in tr.state.log_history
                                        if "completions/mean_length" in l])
                    coef += [l["delta/seconds"] for l in tr.state.log_history if "delta/seconds" in l]
            t0, t1 = statistics.median(times["none"]), statistics.median(times["delta"])
            same = "" if lengths["none"][0] == lengths["delta"][0] else "  (first-round completions differ!)"
            print(f"{size:>6} {n_params / 1e6:>7.1f}M {str(aligned):>8} {t0:>12.3f} {t1:>13.3f} {t1 / t0:>7.3f} "
                  f"{statistics.median(coef) if coef else float('nan'):>8.4f}{same}", flush=True)


if __name__ == "__main__":
    main()
