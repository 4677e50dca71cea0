"""Memory of DelTA's proxies per GPU for each `proxy_cache` option of the trainer: computed at the paper's shape and
at the one-GPU shape, and measured at a scaled-down shape on this machine.

    python benchmarks/memory.py                  # both tables (the measurement: a few minutes on 2 CPU cores)
    python benchmarks/memory.py --no-measure     # the computed table only

Shapes, per GPU (= per data-parallel process, which holds its share of the rollout batch), read from the profiles:
B = per_device_train_batch_size x steps_per_generation completions per GPU, micro-batches b =
per_device_train_batch_size, up to max_completion_length tokens, K = delta_K (default 1), bytes per value from the
first backbone's dtype (default bf16 on a GPU), d from the HIDDEN table below (the models' config.json).
  paper  configs/paper.yaml: Qwen3-8B-Base, d = 4096, bf16 hidden states; 2,048 completions per rollout batch over 8
         GPUs = 256 per GPU, of up to 20,480 tokens, micro-batches of 4. Mean length ~8k: a working figure (the paper
         gives none; not in the profile).
  gpu1   configs/gpu1.yaml: Qwen3-0.6B-Base, d = 1024, float32 weights under bf16 autocast (float32 hidden states),
         512 completions per rollout batch on 1 GPU, up to 1,024 tokens, micro-batches of 16. Mean ~600: the profile's
         estimate of ~300k tokens per rollout batch.
"padded" is what the trainer holds: TRL pads every completion of the batch to the longest one, and with a 20k-token
budget some completion nearly always runs to the limit. "mean" (no padding) is a lower bound.

What each option holds on the device on top of training (nbs/03_trainer.ipynb), with P = B·T·d values of the
batch and P_b = b·T·d of one forward micro-batch:
  memory     the hidden states captured in the old-log-prob pass, concatenated (the pieces and the result: 2·P for a
             moment), then the proxies while the hidden states are still referenced: peak 2·P.
  host       one micro-batch of hidden states during the pass, then per sweep one micro-batch copied back and its
             proxies: 2·P_b. P values in pinned host memory; K + 3 = 4 copies of them to the device per step.
  recompute  per extra forward pass one micro-batch of hidden states and its proxies: 2·P_b; K + 2 = 3 extra forward
             passes (variance="auto" takes the Gram-matrix path on CUDA).
plus the estimator's working set: on a GPU a float32 copy of one chunk of bf16 proxies (at most 2^27 elements; none
for float32 proxies), or with the Gram matrices a float64 copy and the side selections (2 x 8 bytes per element) and
4·d^2 float64; and ~100 bytes of per-token state.
None of the options adds anything to the training step itself (the loss uses the B x T weights only).

The measurement runs the trainer's real code path (`_generate_and_score_completions`) on a tiny Qwen3 of width d on
this CPU, each option in a fresh process, and reads the resident-memory high-water mark (Linux VmHWM) in two windows:
during TRL's old-log-prob pass (which carries the capture) and after it (the coefficients), each above the resident
memory when the pass began. The pass's own activations (eager attention) peak inside it and are freed after it, so
the two windows are reported apart; DAPO (no proxies) is the baseline of the first. On a CPU the "device" is host memory, so 'host' measures
P + P_b here (its hidden states are on the same memory); its device benefit needs an accelerator and is computed,
not measured. `--device cuda` measures peak allocated GPU memory instead (written for the next GPU lease; not yet run).
"""
import argparse
import gc
import json
import os
from pathlib import Path
import subprocess
import sys

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = {"Qwen3-8B-Base": 4096, "Qwen3-0.6B-Base": 1024}  # hidden_size in each model's config.json
MEAN_TOKENS = {"paper": 8192, "gpu1": 600}  # mean completion length: not in the profiles (see the docstring)


def profile_shape(profile):
    "Per-GPU shape of a profile's rollout batch for its first backbone (configs/<profile>.yaml)."
    import yaml
    raw = yaml.safe_load((ROOT / "configs" / f"{profile}.yaml").read_text())
    tr, (name, bb) = raw["trainer"], next(iter(raw["backbones"].items()))
    dtype = bb.get("dtype", "bfloat16")  # delta_repro.models.load_model: bf16 on CUDA unless the profile says
    return dict(B=tr["per_device_train_batch_size"] * tr["steps_per_generation"], b=tr["per_device_train_batch_size"],
                T_max=tr["max_completion_length"], T_mean=MEAN_TOKENS[profile], d=HIDDEN[name], K=tr.get("delta_K", 1),
                bytes=4 if dtype == "float32" else 2, note=f"{name}, {dtype} hidden states (configs/{profile}.yaml)")


SHAPES = {name: profile_shape(name) for name in ("paper", "gpu1")}
OPTIONS = ("memory", "host", "recompute")
CHUNK = 2 ** 27  # elements per chunk of the estimator on a GPU (StreamingDeltaEstimator._default_chunk)
PER_TOKEN = 100  # bytes of per-token estimator state (advantages, sides, codes, kept margins, outputs)


def predicted(option, B, b, T, d, bytes, K=1, gpu=True):
    """Bytes on the device and in host memory, extra forward passes and copies of the batch to the device per step."""
    P, Pb, N = B * T * d * bytes, b * T * d * bytes, B * T
    gram = option == "recompute" and gpu  # variance="auto": Gram matrices on CUDA
    chunk = min(CHUNK, (N if option == "memory" else b * T) * d) if gpu else 0  # elements of one chunk
    if gram: work = chunk * 8 * 2 + 4 * d * d * 8  # float64 copy of the chunk, its side selections, Gram matrices
    else: work = chunk * 4 if bytes < 4 else 0  # bf16 chunks are upcast to float32 off the CPU; float32 is read as is
    work += PER_TOKEN * N
    if option == "memory": return dict(device=2 * P + work, host=0, passes=0, copies=0)
    if option == "host": return dict(device=2 * Pb + work, host=P, passes=0, copies=K + 3)
    return dict(device=2 * Pb + work, host=0, passes=K + 2 if gram else K + 3, copies=0)


def computed_table():
    print("Proxy memory per GPU on top of training, computed (GB = 1e9 bytes; see the docstring for the formulas)")
    print(f"{'shape':>6} {'option':>9} {'device, mean len':>17} {'device, padded':>15} {'host, mean len':>15} "
          f"{'host, padded':>13} {'extra fwd passes':>16} {'batch copies':>12}")
    rows = []
    for name, s in SHAPES.items():
        for option in OPTIONS:
            mean = predicted(option, s["B"], s["b"], s["T_mean"], s["d"], s["bytes"], K=s["K"])
            pad = predicted(option, s["B"], s["b"], s["T_max"], s["d"], s["bytes"], K=s["K"])
            rows.append(dict(shape=name, option=option, device_mean_gb=mean["device"] / 1e9,
                             device_padded_gb=pad["device"] / 1e9, host_mean_gb=mean["host"] / 1e9,
                             host_padded_gb=pad["host"] / 1e9, extra_forward_passes=pad["passes"],
                             batch_copies=pad["copies"], **s))
            print(f"{name:>6} {option:>9} {mean['device'] / 1e9:>17.2f} {pad['device'] / 1e9:>15.2f} "
                  f"{mean['host'] / 1e9:>15.2f} {pad['host'] / 1e9:>13.2f} {pad['passes']:>16} {pad['copies']:>12}")
    for name, s in SHAPES.items():
        print(f"  {name}: {s['note']}, d = {s['d']}, {s['B']} completions per GPU of up to {s['T_max']} tokens "
              f"(mean {s['T_mean']}), micro-batches of {s['b']}, K = {s['K']}")
    p = SHAPES["paper"]
    print(f"  paper, 'host': {8 * p['B'] * p['T_max'] * p['d'] * p['bytes'] / 1e9:.0f} GB of pinned host memory per "
          f"8-GPU node padded ({8 * p['B'] * p['T_mean'] * p['d'] * p['bytes'] / 1e9:.0f} GB at the mean length); its "
          f"{p['K'] + 3} copies per step move {(p['K'] + 3) * p['B'] * p['T_max'] * p['d'] * p['bytes'] / 1e9:.0f} GB "
          f"per GPU, ~{(p['K'] + 3) * p['B'] * p['T_max'] * p['d'] * p['bytes'] / 25e9:.0f} s at 25 GB/s over PCIe")
    return rows


def _status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))


def measure(case):
    "DelTA's peak over DAPO's in one generation batch of the trainer on a tiny model (one option; a fresh process)."
    import tempfile
    import torch
    from datasets import Dataset
    from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
    from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer

    torch.set_num_threads(int(os.environ.get("DELTA_MEMORY_THREADS", torch.get_num_threads())))
    pairs = [(x, y) for x in range(10) for y in range(10)]
    tok = train_bpe_tokenizer([f"{x} + {y} = {x + y}" for x, y in pairs], vocab_size=300)
    ds = Dataset.from_list([{"prompt": f"{x} + {y} =", "answer": str(x + y)} for x, y in pairs])
    def reward(completions, answer, **kw): return [float(c.count(a[-1])) + 0.01 * len(c) for c, a in zip(completions, answer)]
    option, cuda = case["option"], case.get("device", "cpu") == "cuda"
    args = DeltaGRPOConfig(output_dir=tempfile.mkdtemp(), credit_assignment="none" if option == "none" else "delta",
                           proxy_cache="memory" if option == "none" else option, per_device_train_batch_size=case["b"],
                           num_generations=4, steps_per_generation=case["B"] // case["b"], gradient_accumulation_steps=1,
                           max_completion_length=case["T"], use_cpu=not cuda, bf16=False, report_to="none",
                           save_strategy="no", disable_tqdm=True, seed=0, loss_type="dapo", epsilon_high=0.28,
                           delta=10.0, beta=0.0, logging_steps=1, max_steps=1)
    model = tiny_causal_lm(tok, "qwen3", hidden_size=case["d"], num_layers=1, num_heads=8)
    tr = DeltaGRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    batch = next(iter(tr.get_train_dataloader()))
    state = dict(armed=False, rss0=None)
    inner = tr._get_per_token_logps_and_entropies
    def reset_hwm():
        with open("/proc/self/clear_refs", "w") as f: f.write("5")  # VmHWM := VmRSS
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
    def peak():
        if cuda: torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() if cuda else _status("VmHWM")) - state["base"]
    def windows(*a, **kw):  # after generation: TRL's log-prob pass (capture included), then what follows it
        if not state["armed"] or state["rss0"] is not None: return inner(*a, **kw)
        gc.collect()
        reset_hwm()
        state["rss0"] = _status("VmRSS")
        # the base is the high-water mark just reset, not a VmRSS read before the reset: the resident set can shrink
        # between the two reads (pages reclaimed on a busy machine), which made the peak above it negative
        state["base"] = torch.cuda.memory_allocated() if cuda else _status("VmHWM")
        result = inner(*a, **kw)
        state["during"] = peak()
        reset_hwm()
        return result
    tr._get_per_token_logps_and_entropies = windows
    torch.manual_seed(0)
    tr._generate_and_score_completions(batch)  # warm-up: first-call allocations
    gc.collect()
    state["armed"] = True
    torch.manual_seed(0)
    out = tr._generate_and_score_completions(batch)
    after = peak()
    B, T = out["completion_ids"].shape
    return dict(case, during_bytes=state["during"], after_bytes=after, B_measured=B, T_measured=T,
                valid_tokens=int(out["completion_mask"].sum()))


def measured_table(a):
    cuda = a.device == "cuda"
    where = ("on the GPU: peak allocated device memory (max_memory_allocated)" if cuda else
             "on this CPU: peak resident memory (VmHWM)")
    print(f"\nMeasured {where}, during TRL's log-prob pass (which carries the capture) and after it (the coefficients): "
          f"the trainer's generation batch on a tiny Qwen3 (1 layer, d = {a.d}), {a.completions} completions of up to "
          f"{a.tokens} tokens, micro-batches of {a.micro}, float32")
    rows, env = [], dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")  # large tensors straight from mmap: freed memory
    # leaves the resident set at once, so the high-water mark follows the live tensors
    for option in ("none",) + OPTIONS:
        case = dict(option=option, B=a.completions, b=a.micro, T=a.tokens, d=a.d, device=a.device)
        res = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True, text=True, env=env)
        if res.returncode != 0:
            print(f"{option:>9}  failed: {res.stderr.strip().splitlines()[-1] if res.stderr else res.returncode}")
            continue
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    base = next((r for r in rows if r["option"] == "none"), None)
    print(f"{'option':>9} {'B x T x d':>16} {'during pass':>12} {'above DAPO':>11} {'after pass':>11} {'predicted':>10}"
          "  formula (after the pass)")
    formula = {"none": "", "memory": "2·P: hidden states and proxies",
               "host": "P + P_b (on an accelerator: 2·P_b on it, P in host memory)",
               "recompute": "2·P_b + a forward pass's activations (~ DAPO's 'during pass')"}
    if cuda: formula.update(host="2·P_b (+ the estimator; P in pinned host memory)",
                            recompute="2·P_b + Gram path + a forward pass's activations")
    for r in rows:
        B, T, d = r["B_measured"], r["T_measured"], r["d"]
        P, Pb = B * T * d * 4, r["b"] * T * d * 4
        if cuda: pred = 0 if r["option"] == "none" else predicted(r["option"], B, r["b"], T, d, 4)["device"]
        else: pred = {"none": 0, "memory": 2 * P, "host": P + Pb, "recompute": 2 * Pb}[r["option"]]
        r["predicted_after_bytes"] = pred
        above = f"{(r['during_bytes'] - base['during_bytes']) / 1e6:>11.1f}" if base else f"{'':>11}"
        print(f"{r['option']:>9} {f'{B} x {T} x {d}':>16} {r['during_bytes'] / 1e6:>12.1f} {above} "
              f"{r['after_bytes'] / 1e6:>11.1f} {pred / 1e6:>10.1f}  {formula[r['option']]}")
    print("  MB = 1e6 bytes above the memory in use when TRL's log-prob pass began; P = B·T·d, P_b = micro-batch·T·d "
          "float32 values")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-measure", action="store_true", help="print the computed table only")
    ap.add_argument("--d", type=int, default=256, help="width of the tiny model measured")
    ap.add_argument("--completions", type=int, default=64, help="completions per generation batch measured")
    ap.add_argument("--tokens", type=int, default=512, help="max completion tokens measured")
    ap.add_argument("--micro", type=int, default=8, help="forward micro-batch measured (per_device_train_batch_size)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the measured trainer runs")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    if a.case:
        print(json.dumps(measure(json.loads(a.case))))
        return
    if a.d < 8 or a.d % 8: ap.error(f"--d must be a positive multiple of 8 (8 heads), got {a.d}")
    if a.micro < 1 or a.completions < 4 or a.completions % 4 or a.completions % a.micro:
        ap.error("--completions must be a multiple of 4 (the group size) and of --micro")
    if a.tokens < 1: ap.error(f"--tokens must be >= 1, got {a.tokens}")
    out = dict(computed=computed_table())
    if not a.no_measure:
        out["measured"] = measured_table(a)
    if a.json:
        with open(a.json, "x") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
