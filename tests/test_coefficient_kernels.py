"""The estimator's sweeps at the memory roofline: the bf16 CPU kernels against float64 and against the float32 path,
one product per sweep, and the non-finite checks that now ride on the products."""
import functools
import math

import pytest
import torch
import torch.utils.cpp_extension

import delta_repro.coefficients as coefficients
from delta_repro.coefficients import DeltaConfig, StreamingDeltaEstimator, delta_coefficients, plain_delta_coefficients

kernels = pytest.mark.skipif(coefficients._cpu_kernels() is None, reason="no C++ compiler: the bf16 kernels were not built")


def bf16_batch(B=5, T=37, d=67, seed=0, per_token=False):
    "A bf16 batch whose sizes are multiples of none of the kernels' blocks, with padding and a zero-advantage response."
    g = torch.Generator().manual_seed(seed)
    proxies = (torch.randn(B, T, d, generator=g) + torch.randn(d, generator=g)).bfloat16()
    adv = torch.randn(B, T, generator=g) if per_token else torch.randn(B, generator=g)
    adv[1] = 0.0
    mask = (torch.arange(T)[None] < torch.randint(1, T + 1, (B,), generator=g)[:, None]).float()
    return proxies, adv, mask


@kernels
@pytest.mark.parametrize("n, d", [(1, 1), (9, 5), (300, 64), (257, 1031)])
def test_kernel_products_equal_float64_products_of_the_same_values(n, d):
    g = torch.Generator().manual_seed(n + d)
    x = (torch.randn(n, d + 3, generator=g) * 3 + 1).bfloat16()[:, 2:-1]  # rows with a stride
    w = torch.randn(d, generator=g, dtype=torch.float64)
    coef = torch.rand(n, generator=g, dtype=torch.float64)
    code = torch.randint(0, 4, (n,), generator=g).to(torch.int8)
    x64 = x.double()
    y = coefficients._dot_rows(x, w)
    assert ((y - x64 @ w).abs() <= 1e-6 * (x64.abs() @ w.abs()) + 1e-12).all()  # float32 rounding of Σ|terms|
    sums, mass = coefficients._side_sums(x, code, coef, with_valid=True)
    C = torch.stack([torch.where(code == 0, coef, 0.0), torch.where(code == 1, coef, 0.0), (code <= 2).double()])
    scale = (C @ x64.abs()).max().item() + 1e-30
    torch.testing.assert_close(sums, C @ x64, atol=1e-6 * scale, rtol=0)
    torch.testing.assert_close(mass, C.sum(1), atol=1e-6, rtol=1e-6)


@kernels
@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("variant", [{}, dict(K=0), dict(K=2), dict(assignment="hard"), dict(contrast="within-side")])
def test_bf16_kernels_give_the_float32_path_and_the_float64_result(variant, per_token, monkeypatch):
    P, A, M = bf16_batch(per_token=per_token)
    P = torch.where(M.bool()[..., None], P, torch.tensor(float("nan"), dtype=P.dtype))  # garbage on padding
    cfg = DeltaConfig(**variant)
    fast = delta_coefficients(P, A, M, cfg)
    exact = plain_delta_coefficients(P.double(), A, M, cfg)  # the same bf16 values, float64 arithmetic
    with monkeypatch.context() as m:
        m.setattr(coefficients, "_cpu_kernels", lambda: None)
        upcast = delta_coefficients(P, A, M, cfg)
    for name in ("weights", "lam", "scores"):
        torch.testing.assert_close(getattr(fast, name), getattr(upcast, name), atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(getattr(fast, name), getattr(exact, name), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(fast.centroids, exact.centroids, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast.gamma, exact.gamma, atol=1e-8, rtol=1e-5)


@kernels
@pytest.mark.parametrize("variance", ["pass", "gram"])
def test_bf16_streaming_in_small_chunks_equals_in_memory(variance):
    P, A, M = bf16_batch(B=6, T=29, d=40, seed=3)
    whole = delta_coefficients(P, A, M)
    est = StreamingDeltaEstimator(variance=variance, chunk_tokens=7)
    parts = [(P[:2], A[:2], M[:2]), (P[2:5], A[2:5], M[2:5]), (P[5:], A[5:], M[5:])]
    while not est.done:
        for p in parts: est.update(*p)
        est.end_pass()
    got = torch.cat([c.weights for c in est.result()])
    torch.testing.assert_close(got, whole.weights, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("variant, products", [({}, 4), (dict(K=0), 2), (dict(K=2), 6), (dict(assignment="hard"), 4)])
def test_each_sweep_is_one_product_over_the_proxies(variant, products, dtype, monkeypatch):
    # default (K = 1): 4 sweeps, 4 products; K = 0: the final sweep reuses the temperature sweep's margins; a refinement
    # sweep without kept margins (K >= 2, or no temperature sweep) reads the proxies twice
    calls = []
    for name in ("_dot_rows", "_side_sums"):
        f = getattr(coefficients, name)
        monkeypatch.setattr(coefficients, name, lambda *a, _f=f, _n=name, **k: (calls.append(_n), _f(*a, **k))[1])
    P, A, M = bf16_batch()
    delta_coefficients(P.to(dtype), A, M, DeltaConfig(**variant))
    assert len(calls) == products, calls


@kernels
def test_bf16_non_finite_proxies_on_valid_tokens_are_rejected_and_on_padding_ignored():
    P, A, M = bf16_batch()
    nan = torch.tensor(float("nan"), dtype=P.dtype)
    zero_adv_token = (1, 0)  # response 1 has advantage 0: the token enters no centroid, but it is valid
    for b, t in [zero_adv_token, (0, 0)]:
        bad = P.clone()
        bad[b, t, 3] = nan
        with pytest.raises(ValueError, match="proxies"):
            delta_coefficients(bad, A, M)
    padded = torch.where(M.bool()[..., None], P, torch.tensor(math.inf, dtype=P.dtype))
    torch.testing.assert_close(delta_coefficients(padded, A, M).weights, delta_coefficients(P, A, M).weights)


def test_a_failed_build_warns_once_in_one_line_and_gives_the_same_coefficients(monkeypatch):
    "No compiler (simulated: the extension builder fails as it does without c++): one warning, the float32 path."
    P, A, M = bf16_batch(B=7, T=50, d=96, seed=5)
    P = torch.where(M.bool()[..., None], P, torch.tensor(float("nan"), dtype=P.dtype))  # garbage on padding
    built = coefficients._cpu_kernels() is not None
    kernel_path = delta_coefficients(P, A, M)  # the kernels where they build here, else already the float32 path
    def no_compiler(*a, **k):
        raise RuntimeError("Error building extension 'delta_repro_bf16':\n[1/3] c++ -MMD -MF main.o.d -O3 -c main.cpp"
                           "\nFAILED: main.o\n/bin/sh: 1: c++: not found\nninja: build stopped: subcommand failed.")
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", no_compiler)
    monkeypatch.delenv("DELTA_REPRO_CPU_KERNELS", raising=False)
    monkeypatch.setattr(coefficients, "_cpu_kernels", functools.cache(coefficients._cpu_kernels.__wrapped__))
    with pytest.warns(UserWarning) as rec:
        fallback = delta_coefficients(P, A, M)  # 4 sweeps, each asking for the kernels
        delta_coefficients(P, A, M)
    (w,) = [r for r in rec if "delta_repro" in str(r.message)]  # once per process
    msg = str(w.message)
    assert "\n" not in msg and "c++: not found" in msg and "upcast to float32" in msg, msg
    assert not coefficients._uses_kernel(P)
    exact = plain_delta_coefficients(P.double(), A, M)  # the same bf16 values in float64
    scale = {"margins": exact.margins.abs().max().item()}  # float32 products: error relative to the largest |Δ|
    for name in ("weights", "lam", "scores", "margins"):
        tol = dict(atol=1e-5 * scale.get(name, 0.1), rtol=0)
        torch.testing.assert_close(getattr(fallback, name), getattr(exact, name), **tol)
        if built: torch.testing.assert_close(getattr(fallback, name), getattr(kernel_path, name), **tol)
    torch.testing.assert_close(fallback.gamma, kernel_path.gamma, atol=1e-8, rtol=1e-5)


def test_kernels_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("DELTA_REPRO_CPU_KERNELS", "0")
    assert coefficients._cpu_kernels.__wrapped__() is None
