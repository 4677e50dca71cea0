"""What a token weighting's loss scale does under AdamW, and whether a resumed run equals an uninterrupted one
(issue 48, items 1 and 2): the figures behind `tests/test_loss_scale.py`, `tests/test_resume.py` and the sentences of
`docs/status.md` that cite this script's output.

    python benchmarks/loss_scale.py --json benchmarks/results/cpu-loss-scale-2026-12-06/loss_scale.json

1. On the tiny policy of the test suite (12 optimizer steps, 2 per rollout batch, lr 1e-3, the same seed): DAPO
   against DAPO with every token weighted 1.15 (the placebo), with TRL's gradient clipping at 1 and without it, and
   against a weight that alternates 1.0 / 2.0 from one rollout batch to the next (no clipping): the relative distance
   of the final parameters from DAPO's, beside how far training moved them, and whether every logged reward is equal.
2. The same policy interrupted after step 4 (a rollout-batch boundary) or step 3 (inside a batch) and resumed:
   the relative distance from the uninterrupted run and the number of rollout batches sampled.
3. With `--runs` (default `runs/<profile>/runs` when it holds them): the SmolLM2 study's logged loss scale per method
   (`claims.credit_summary`: mean, spread across rollout batches, share of optimizer steps whose gradient was clipped).
Prints one line per figure; `--json` writes them."""
import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _trainer(out, **kw):
    from conftest import BASE, PAIRS, prefix_reward
    from datasets import Dataset
    from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
    from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer
    tok = train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)
    ds = Dataset.from_list([{"prompt": f"{a} + {b} =", "answer": str(a + b)} for a, b in PAIRS])
    args = DeltaGRPOConfig(output_dir=str(out), **{**BASE, "max_steps": 12, **kw})
    torch.manual_seed(0)
    return DeltaGRPOTrainer(model=tiny_causal_lm(tok, "qwen3", hidden_size=32), reward_funcs=prefix_reward, args=args,
                            train_dataset=ds, processing_class=tok)


def _params(tr): return torch.cat([p.detach().flatten().double() for p in tr.model.parameters()])
def _rewards(tr): return [h["reward"] for h in tr.state.log_history if "reward" in h]
def _rel(a, b): return float((a - b).norm() / b.norm())


def scale_figures(tmp: Path) -> dict:
    from transformers import TrainerCallback

    class Alternate(TrainerCallback):
        def __init__(self, tr): self.tr = tr
        def on_step_begin(self, args, state, control, **kw):
            self.tr.args.loss_scale = 1.0 if (state.global_step // self.tr.args.steps_per_generation) % 2 == 0 else 2.0

    out, start = {}, _params(_trainer(tmp / "s"))
    for clip in (1.0, 1e9):
        runs = {}
        for name, kw in (("DAPO", dict(credit_assignment="none")),
                         ("placebo", dict(credit_assignment="constant", loss_scale=1.15)),
                         ("alternating", dict(credit_assignment="constant", loss_scale=1.0))):
            if name == "alternating" and clip == 1.0: continue
            tr = _trainer(tmp / f"{name}{clip}", max_grad_norm=clip, **kw)
            if name == "alternating": tr.add_callback(Alternate(tr))
            tr.train()
            runs[name] = tr
        key = "clip 1" if clip == 1.0 else "no clipping"
        base = _params(runs["DAPO"])
        grad = [h["grad_norm"] for h in runs["DAPO"].state.log_history if "grad_norm" in h]
        out[key] = dict(moved=_rel(base, start), steps_clipped=sum(g > clip for g in grad), steps=len(grad),
                        **{f"{n} distance": _rel(_params(t), base) for n, t in runs.items() if n != "DAPO"},
                        **{f"{n} rewards equal": _rewards(t) == _rewards(runs["DAPO"]) for n, t in runs.items() if n != "DAPO"})
    return out


def resume_figures(tmp: Path) -> dict:
    from transformers import TrainerCallback

    class Stop(TrainerCallback):
        def __init__(self, k): self.k = k
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == self.k: control.should_training_stop = True

    full = _trainer(tmp / "full", max_steps=8)
    full.train()
    out = {}
    for k in (4, 3):
        d = tmp / f"part{k}"
        part = _trainer(d, max_steps=8, save_strategy="steps", save_steps=k)
        part.add_callback(Stop(k))
        part.train()
        again = _trainer(d, max_steps=8, save_strategy="steps", save_steps=k)
        again.train(resume_from_checkpoint=str(d / f"checkpoint-{k}"))
        out[f"resumed after step {k}"] = dict(distance=_rel(_params(again), _params(full)),
                                             rollout_batches=len(_rewards(again)), uninterrupted_batches=len(_rewards(full)),
                                             bit_identical=bool(torch.equal(_params(again), _params(full))))
    return out


def study_figures(runs: Path, profile: str) -> dict:
    from delta_repro.claims import credit_summary
    from delta_repro.experiments import load_plan
    plan = load_plan(ROOT / "configs" / f"{profile}.yaml")
    cs = credit_summary(plan, "table9_smollm2@long", runs)
    return {m: {k: (None if v != v else float(v)) for k, v in r.items()} for m, r in cs.iterrows()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--runs", default=None, help="runs folder of the profile (default runs/<profile>/runs)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        res["loss scale, tiny policy, 12 steps"] = scale_figures(Path(tmp))
        res["resume, tiny policy, 8 steps, 2 per rollout batch"] = resume_figures(Path(tmp))
    runs = Path(a.runs) if a.runs else ROOT / "runs" / a.profile / "runs"
    if (runs / "smollm2-long__math__DelTA__s0" / "log_history.json").exists():
        res["SmolLM2 study, logged per rollout batch"] = study_figures(runs, a.profile)
    print(json.dumps(res, indent=1))
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
