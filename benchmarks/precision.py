"""Numerical agreement of the DelTA coefficients when the proxies are bf16 (as in bf16 training) rather than float64.

    python benchmarks/precision.py                                   # d = 4096, N = 2e4 tokens
    python benchmarks/precision.py --device cuda --tokens 1000000    # GPU, a paper-sized rollout batch

The proxies are synthetic at the paper's width: a shared offset (as real hidden states have), unit noise, and a
direction added with the sign of the completion's advantage, so the two centroids differ as they do in training.
Three estimates of the normalised weights λ̄ (Eq. 7) are compared:
  * `f64`:  float64 proxies;
  * `q64`:  the same values rounded to bf16, held in float64 (exact arithmetic on bf16 data);
  * `bf16`: the bf16 tensor itself (what the trainer passes: float32 products of the bf16 values, float64 sums).
`bf16 vs q64` is the error of the estimator's own arithmetic; `q64 vs f64` is the error of storing proxies in bf16.
Prints max and mean |Δλ̄|, the share of tokens with |Δλ̄| > 1e-3, and the relative change of γ±, and whether the
estimator's arithmetic keeps λ̄ within 1e-4 of exact float64 arithmetic on the same values (`bf16 vs q64`).
"""
import argparse
import json
import math
from pathlib import Path

import torch


def compare(a, b, valid):
    "Differences between two `DeltaCoefficients` on the valid tokens."
    d = (a.weights - b.weights)[valid].abs().double()
    g = ((a.gamma - b.gamma).abs() / b.gamma.abs().clamp(min=1e-300)).max()
    return dict(max_abs=float(d.max()), mean_abs=float(d.mean()), share_over_1e3=float((d > 1e-3).double().mean()),
                gamma_rel=float(g))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=float, default=2e4, help="valid tokens N (completions of 1024 tokens)")
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--offset", type=float, default=0.5, help="shared offset of every proxy coordinate")
    ap.add_argument("--signal", type=float, default=0.05, help="scale of the advantage-signed direction")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()
    if not (math.isfinite(a.tokens) and a.tokens >= 1024): ap.error(f"--tokens must be >= 1024 (one completion), got {a.tokens}")
    if a.d < 1: ap.error(f"--d must be >= 1, got {a.d}")
    if not (math.isfinite(a.offset) and math.isfinite(a.signal)): ap.error("--offset and --signal must be finite")
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    try: torch.empty(0, device=a.device)
    except (RuntimeError, ValueError) as e: ap.error(f"--device {a.device!r} is not usable here: {e}")
    from delta_repro.coefficients import DeltaConfig, delta_coefficients

    T = 1024
    B = int(a.tokens) // T
    dev = torch.device(a.device)
    g = torch.Generator(device=dev).manual_seed(0)
    adv = torch.randn(B, generator=g, device=dev, dtype=torch.float64)
    u = torch.randn(a.d, generator=g, device=dev, dtype=torch.float64)
    x = torch.randn(B, T, a.d, generator=g, device=dev, dtype=torch.float64)
    x.add_(a.offset).add_(a.signal * adv.sign()[:, None, None] * u)
    mask = torch.ones(B, T, device=dev)
    mask[:, T - T // 4:] = torch.rand(B, T // 4, generator=g, device=dev) < 0.5  # some padding
    valid = mask.bool()
    cfg = DeltaConfig()
    r = {}
    r["f64"] = delta_coefficients(x, adv, mask, cfg)
    xb = x.to(torch.bfloat16)
    del x
    r["bf16"] = delta_coefficients(xb, adv, mask, cfg)
    r["q64"] = delta_coefficients(xb.double(), adv, mask, cfg)
    out = dict(tokens=int(valid.sum()), d=a.d, device=a.device, offset=a.offset, signal=a.signal,
               lam_spread_f64=float(r["f64"].weights[valid].std()),
               arithmetic=compare(r["bf16"], r["q64"], valid), storage=compare(r["q64"], r["f64"], valid),
               total=compare(r["bf16"], r["f64"], valid))
    print(f"device={a.device} d={a.d} valid tokens={out['tokens']} offset={a.offset} signal={a.signal} "
          f"std(λ̄, f64)={out['lam_spread_f64']:.4f} torch={torch.__version__}")
    print(f"{'comparison':>22} {'max |Δλ̄|':>10} {'mean |Δλ̄|':>11} {'>1e-3':>8} {'γ rel':>9}")
    for name, key in [("bf16 vs q64 (arith.)", "arithmetic"), ("q64 vs f64 (storage)", "storage"),
                      ("bf16 vs f64 (total)", "total")]:
        c = out[key]
        print(f"{name:>22} {c['max_abs']:>10.2e} {c['mean_abs']:>11.2e} {c['share_over_1e3']:>8.2%} {c['gamma_rel']:>9.1e}")
    ok = out["arithmetic"]["max_abs"] <= 1e-4
    print(f"estimator arithmetic: max |Δλ̄| {out['arithmetic']['max_abs']:.2e} against float64 on the same values "
          f"({'within' if ok else 'NOT within'} 1e-4)")
    if a.json:
        with open(a.json, "x") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
