"""Speed and memory of the DelTA coefficient estimator at the paper's hidden size (d = 4096, Qwen3-8B).

    python benchmarks/coefficients.py                      # N = 1e4, 1e5, 1e6 tokens, bf16 proxies
    python benchmarks/coefficients.py --sizes 10000 --dtype float32 --device cuda

For each N it prints tokens per second and peak memory of
  * `delta_coefficients` on an in-memory (N, d) batch (K + 3 sweeps over memory), and
  * `StreamingDeltaEstimator` fed micro-batches of `--micro` tokens (`variance="pass"`, K + 3 sweeps; and
    `variance="gram"`, K + 2 sweeps, on CUDA or for N <= --gram-max on CPU, where its O(N d^2) float64 cost is high).
Each case runs in a fresh subprocess, so the peak resident memory (CPU) or peak allocated memory (CUDA) is its own.
"Extra" memory is the peak minus the proxies themselves: it must stay O(chunk * d + N), never O(N * d) more.
Proxies are random with a shared offset (like real hidden states); timings exclude creating them.
"""
import argparse
import json
import resource
from pathlib import Path
import subprocess
import sys
import time

import torch


def run_case(case):
    from delta_repro.coefficients import DeltaConfig, StreamingDeltaEstimator, delta_coefficients

    N, d, dtype, device = case["N"], case["d"], getattr(torch, case["dtype"]), torch.device(case["device"])
    T = 1024  # tokens per completion
    B = max(1, N // T)
    g = torch.Generator(device=device).manual_seed(0)
    adv = torch.randn(B, generator=g, device=device)
    if case["kind"] == "in-memory":
        proxies = torch.randn(B, T, d, generator=g, device=device, dtype=dtype).add_(0.5)  # in place: no 2nd copy
        mask = torch.ones(B, T, device=device)
        batches = None
    else:  # a few distinct micro-batches, cycled: stands in for proxies recomputed by forward passes
        mb = max(1, case["micro"] // T)
        pool = [torch.randn(mb, T, d, generator=g, device=device, dtype=dtype).add_(0.5) for _ in range(4)]
        batches = [(pool[i % 4], adv[s:s + mb], torch.ones(min(mb, B - s), T, device=device))
                   for i, s in enumerate(range(0, B, mb))]
        batches = [(p[:m.shape[0]], a, m) for p, a, m in batches]
    input_bytes = B * T * d * torch.finfo(dtype).bits // 8 if batches is None else sum(p.numel() * p.element_size() for p in pool)
    if device.type == "cuda":
        torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    if batches is None:
        r = delta_coefficients(proxies, adv, mask, DeltaConfig())
        n_passes = 4
    else:
        est = StreamingDeltaEstimator(DeltaConfig(), variance=case["kind"].split("-")[1])
        while not est.done:
            for b in batches:
                est.update(*b)
            est.end_pass()
        r = est.result()[0]
        n_passes = est.n_passes
    if device.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    assert torch.isfinite(r.weights).all()
    if device.type == "cuda":
        extra = torch.cuda.max_memory_allocated() - base
    else:
        extra = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0
    return dict(case, seconds=dt, tokens_per_s=B * T / dt, n_passes=n_passes, input_gb=input_bytes / 1e9,
                extra_gb=max(0, extra) / 1e9)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--micro", type=int, default=16384, help="tokens per streaming micro-batch")
    ap.add_argument("--gram-max", type=float, default=1e4, help="largest N for variance='gram' on CPU")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    if a.case:
        print(json.dumps(run_case(json.loads(a.case))))
        return
    print(f"device={a.device} d={a.d} dtype={a.dtype} torch={torch.__version__} threads={torch.get_num_threads()}")
    print(f"{'N tokens':>10} {'estimator':>16} {'passes':>6} {'seconds':>8} {'tokens/s':>11} {'input GB':>9} {'extra GB':>9}")
    rows = []
    for N in map(int, a.sizes):
        kinds = ["in-memory", "streaming-pass"]
        if a.device == "cuda" or N <= a.gram_max:
            kinds.append("streaming-gram")
        for kind in kinds:
            case = dict(N=N, d=a.d, dtype=a.dtype, device=a.device, kind=kind, micro=a.micro)
            res = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True, text=True)
            if res.returncode != 0:
                print(f"{N:>10} {kind:>16}  failed: {res.stderr.strip().splitlines()[-1] if res.stderr else res.returncode}")
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"{N:>10} {kind:>16} {r['n_passes']:>6} {r['seconds']:>8.2f} {r['tokens_per_s']:>11.3g} "
                  f"{r['input_gb']:>9.2f} {r['extra_gb']:>9.2f}", flush=True)
    if a.json:
        with open(a.json, "x") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
