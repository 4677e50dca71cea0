"""Speed and memory of the DelTA coefficient estimator at the paper's hidden size (d = 4096, Qwen3-8B).

    python benchmarks/coefficients.py                      # bandwidth ratio, then N = 1e4, 1e5, 1e6 tokens, bf16
    python benchmarks/coefficients.py --bandwidth-only     # only the bandwidth ratio (32,768 x 4096 bf16 proxies)
    python benchmarks/coefficients.py --sizes 10000 --dtype float32 --device cuda

First the bandwidth ratio. The estimator is a few sweeps over the N x d proxies, each one product that reads them
once (K + 3 = 4 sweeps for the default config), so its limit is memory bandwidth. In one process, on the same
--bandwidth-tokens x d array, it times a bf16 matrix-vector product (`x @ v`, the reference for what reading the array
costs here) and `delta_coefficients`, interleaved for --rounds rounds after one untimed round of each (which also
builds or loads the bf16 CPU kernels), and prints the medians: GB/s of the matvec, GB/s of the estimator counted as
sweeps x bytes of the array, and their ratio (goal: >= 0.5). The ratio is robust to a loaded machine; the GB/s are not.

Then, for each N, tokens per second and peak memory of
  * `delta_coefficients` on an in-memory (N, d) batch (K + 3 sweeps over memory), and
  * `StreamingDeltaEstimator` fed micro-batches of `--micro` tokens (`variance="pass"`, K + 3 sweeps; and
    `variance="gram"`, K + 2 sweeps, on CUDA or for N <= --gram-max on CPU, where its O(N d^2) float64 cost is high).
Each case runs in a fresh subprocess, so the peak resident memory (CPU) or peak allocated memory (CUDA) is its own.
"Extra" memory is the peak minus the proxies themselves: it must stay O(chunk * d + N), never O(N * d) more.
Proxies are random with a shared offset (like real hidden states); timings exclude creating them.
"""
import argparse
import json
import os
import resource
import statistics
from pathlib import Path
import subprocess
import sys
import time

import torch


def run_bandwidth(case):
    "Median seconds of a bf16 matvec and of `delta_coefficients` over the same array, interleaved; their GB/s and ratio."
    from delta_repro.coefficients import DeltaConfig, delta_coefficients

    N, d, dtype, device = case["N"], case["d"], getattr(torch, case["dtype"]), torch.device(case["device"])
    T = 1024
    B = max(1, N // T)
    g = torch.Generator(device=device).manual_seed(0)
    adv = torch.randn(B, generator=g, device=device)
    proxies = torch.randn(B, T, d, generator=g, device=device, dtype=dtype).add_(0.5)
    mask = torch.ones(B, T, device=device)
    x, v = proxies.view(B * T, d), torch.randn(d, generator=g, device=device, dtype=dtype)
    cfg = DeltaConfig()
    sweeps = cfg.K + 2 + int(cfg.adaptive)  # delta_coefficients' sweeps (variance="pass"), each one read of x

    def timed(f):
        if device.type == "cuda": torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        if device.type == "cuda": torch.cuda.synchronize()
        return time.perf_counter() - t0

    matvec, estimator = (lambda: x @ v), (lambda: delta_coefficients(proxies, adv, mask, cfg))
    timed(matvec), timed(estimator)  # untimed: first touches, kernel build or load
    t_mv, t_est = [], []
    for _ in range(case["rounds"]):
        t_mv.append(timed(matvec))
        t_est.append(timed(estimator))
    gb = x.numel() * x.element_size() / 1e9
    mv, est = gb / statistics.median(t_mv), sweeps * gb / statistics.median(t_est)
    import delta_repro.coefficients as coefficients  # _uses_kernel: absent before the kernels existed
    return dict(case, array_gb=gb, sweeps=sweeps, matvec_s=t_mv, estimator_s=t_est, matvec_gbs=mv, estimator_gbs=est,
                ratio=est / mv, bf16_kernels=getattr(coefficients, "_uses_kernel", lambda x: False)(x), threads=torch.get_num_threads(),
                loadavg=os.getloadavg())


def run_case(case):
    from delta_repro.coefficients import DeltaConfig, StreamingDeltaEstimator, delta_coefficients

    if case["kind"] == "bandwidth": return run_bandwidth(case)
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
    ap.add_argument("--bandwidth-tokens", type=int, default=32768, help="N of the bandwidth ratio (0: skip it)")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds of the bandwidth ratio")
    ap.add_argument("--bandwidth-only", action="store_true", help="print the bandwidth ratio only")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.json and Path(a.json).exists(): ap.error(f"--json {a.json} exists: earlier results are never overwritten")
    if a.bandwidth_tokens < 0 or a.rounds < 1: ap.error("--bandwidth-tokens must be >= 0 and --rounds >= 1")
    if a.case:
        print(json.dumps(run_case(json.loads(a.case))))
        return
    print(f"device={a.device} d={a.d} dtype={a.dtype} torch={torch.__version__} threads={torch.get_num_threads()} "
          f"load average={os.getloadavg()[0]:.1f}")
    rows = []
    if a.bandwidth_tokens:
        case = dict(N=a.bandwidth_tokens, d=a.d, dtype=a.dtype, device=a.device, kind="bandwidth", rounds=a.rounds)
        res = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True, text=True)
        if res.returncode != 0:
            print(f"bandwidth failed: {res.stderr.strip().splitlines()[-1] if res.stderr else res.returncode}")
        else:
            r = json.loads(res.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"bandwidth, {r['N']} x {r['d']} {a.dtype} proxies ({r['array_gb']:.2f} GB), median of {a.rounds} "
                  f"interleaved rounds, bf16 CPU kernels: {r['bf16_kernels']}")
            print(f"{'matvec GB/s':>12} {'estimator GB/s':>15} {'sweeps':>6} {'estimator s':>12} {'ratio':>6}")
            print(f"{r['matvec_gbs']:>12.2f} {r['estimator_gbs']:>15.2f} {r['sweeps']:>6} "
                  f"{statistics.median(r['estimator_s']):>12.3f} {r['ratio']:>6.2f}   (goal: ratio >= 0.5)", flush=True)
    if a.bandwidth_only:
        a.sizes = []
    else:
        print(f"{'N tokens':>10} {'estimator':>16} {'passes':>6} {'seconds':>8} {'tokens/s':>11} {'input GB':>9} {'extra GB':>9}")
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
