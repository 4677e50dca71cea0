"""DelTA coefficient estimator: against a plain float64 reference, by invariances, variants, degenerate batches,
bad inputs, dtypes and the streaming form."""
import threading

import pytest
import torch

from delta_repro.coefficients import (DeltaConfig, StreamingDeltaEstimator, delta_coefficients,
                                      plain_delta_coefficients, random_coefficients)
from reference import reference_delta


def make_batch(B=6, T=9, d=5, seed=0, per_token=False, zero_groups=True):
    g = torch.Generator().manual_seed(seed)
    proxies = torch.randn(B, T, d, generator=g) * 2 + torch.randn(d, generator=g)  # shared offset, like real h
    adv = torch.randn(B, T if per_token else (), generator=g) if per_token else torch.randn(B, generator=g)
    if zero_groups and not per_token:
        adv[0] = 0.0
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None] < lengths[:, None]).float()
    return proxies, adv, mask


VARIANTS = [
    {},
    dict(K=0), dict(K=2), dict(K=3),
    dict(lam_min=0.5, lam_max=1.2), dict(lam_min=0.8, lam_max=1.5), dict(lam_min=0.5, lam_max=1.5),
    dict(temperature="distance"), dict(temperature=0.7),
    dict(assignment="hard"), dict(assignment="hard", K=2),
    dict(contrast="within-side"), dict(contrast="within-side", K=2),
    dict(range_map=False), dict(normalize=False),
]


def assert_matches_reference(r, ref, atol=1e-5):
    for name in ("weights", "lam", "scores"):
        torch.testing.assert_close(getattr(r, name).double(), ref[name], atol=atol, rtol=1e-5, msg=name)
    torch.testing.assert_close(r.margins.double(), ref["margins"], atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(r.gamma.double(), ref["gamma"].double(), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(r.centroids.double(), ref["centroids"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(r.initial_centroids.double(), ref["initial_centroids"], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) or "default")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_plain_reference(variant, seed):
    P, A, M = make_batch(seed=seed)
    r = delta_coefficients(P, A, M, DeltaConfig(**variant))
    assert_matches_reference(r, reference_delta(P, A, M, **variant))


@pytest.mark.parametrize("seed", [0, 3])
def test_per_token_advantages_match_reference(seed):
    P, A, M = make_batch(seed=seed, per_token=True)
    assert_matches_reference(delta_coefficients(P, A, M), reference_delta(P, A, M))


def test_sequence_advantages_equal_broadcast_per_token():
    P, A, M = make_batch()
    a = delta_coefficients(P, A, M)
    b = delta_coefficients(P, A[:, None].expand_as(M).clone(), M)
    torch.testing.assert_close(a.weights, b.weights)


def test_normalised_weights_average_one_and_range():
    P, A, M = make_batch(B=16, T=20, seed=5)
    r = delta_coefficients(P, A, M)
    v = M.bool()
    assert abs(r.weights[v].mean().item() - 1) < 1e-6
    assert (r.weights[~v] == 0).all() and (r.lam[~v] == 0).all()
    assert ((r.lam[v] >= 0.8) & (r.lam[v] <= 1.2)).all()
    assert (r.lam[0][v[0]] == pytest.approx(0.8))  # zero-advantage response -> lam_min
    assert r.n_pos_tokens + r.n_neg_tokens + int(v[0].sum()) == int(v.sum()) == r.n_valid_tokens


# --- invariances -----------------------------------------------------------------------------------------------
def test_permuting_responses_permutes_weights():
    P, A, M = make_batch(B=8, seed=4)
    perm = torch.randperm(8, generator=torch.Generator().manual_seed(0))
    a, b = delta_coefficients(P, A, M), delta_coefficients(P[perm], A[perm], M[perm])
    torch.testing.assert_close(a.weights[perm], b.weights, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("c", [0.01, 3.0, 1000.0])
def test_scaling_advantages_changes_nothing(c):
    P, A, M = make_batch(seed=6)
    a, b = delta_coefficients(P, A, M), delta_coefficients(P, A * c, M)
    torch.testing.assert_close(a.weights, b.weights, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("c", [0.05, 7.0])
def test_scaling_proxies_changes_nothing_with_adaptive_temperature(c):
    # e.g. the 1/τ factor of the exact gradient at rollout temperature τ. Holds while Var(Δ) stays above the
    # paper's 1e-8 floor (margins scale by c², so c = 1e-3 on unit-scale proxies would hit it).
    P, A, M = make_batch(seed=7)
    a, b = delta_coefficients(P, A, M), delta_coefficients(P * c, A, M)
    torch.testing.assert_close(a.weights, b.weights, atol=1e-5, rtol=1e-5)


def test_duplicating_the_batch_duplicates_weights():
    P, A, M = make_batch(seed=8)
    a = delta_coefficients(P, A, M)
    b = delta_coefficients(torch.cat([P, P]), torch.cat([A, A]), torch.cat([M, M]))
    torch.testing.assert_close(b.weights, torch.cat([a.weights, a.weights]), atol=1e-6, rtol=1e-6)


def test_padding_content_is_ignored():
    P, A, M = make_batch(seed=9)
    P2 = torch.where(M.bool()[..., None], P, torch.randn_like(P) * 100)
    torch.testing.assert_close(delta_coefficients(P, A, M).weights, delta_coefficients(P2, A, M).weights)


class ThreadAllReduce:
    """A synchronous sum over `n` threads that stand in for data-parallel processes."""

    def __init__(self, n):
        self.n, self.slots, self.barrier = n, [None] * n, threading.Barrier(n)

    def for_rank(self, rank):
        def all_reduce(t):
            self.slots[rank] = t.clone()
            self.barrier.wait()
            total = sum(self.slots)
            self.barrier.wait()
            return total
        return all_reduce


@pytest.mark.parametrize("variance", ["pass", "gram"])
def test_all_reduce_over_two_shards_equals_whole_batch(variance):
    P, A, M = make_batch(B=8, seed=10)
    whole = delta_coefficients(P, A, M)
    shards = [[(P[:3], A[:3], M[:3])], [(P[3:5], A[3:5], M[3:5]), (P[5:], A[5:], M[5:])]]
    comm, results = ThreadAllReduce(2), [None, None]

    def worker(rank):
        results[rank] = _stream(shards[rank], all_reduce=comm.for_rank(rank), variance=variance)

    threads = [threading.Thread(target=worker, args=(r,)) for r in (0, 1)]
    [t.start() for t in threads]
    [t.join(timeout=60) for t in threads]
    got = torch.cat([c.weights for res in results for c in res])
    torch.testing.assert_close(got, whole.weights, atol=1e-6, rtol=1e-6)
    assert results[0][0].n_valid_tokens == int(M.sum())


def test_local_statistics_differ_from_global():
    """Without the all-reduce each shard normalises on its own: the 'local' mode of the authors' code."""
    P, A, M = make_batch(B=8, seed=10)
    whole = delta_coefficients(P, A, M)
    local = torch.cat([delta_coefficients(P[:4], A[:4], M[:4]).weights, delta_coefficients(P[4:], A[4:], M[4:]).weights])
    assert not torch.allclose(local, whole.weights, atol=1e-4)


# --- the variants change only what they should ----------------------------------------------------------------
def test_range_and_normalisation_switches_do_not_change_scores():
    P, A, M = make_batch(seed=11)
    base = delta_coefficients(P, A, M)
    for v in (dict(lam_min=0.5, lam_max=1.5), dict(range_map=False), dict(normalize=False)):
        r = delta_coefficients(P, A, M, DeltaConfig(**v))
        torch.testing.assert_close(r.scores, base.scores)
        torch.testing.assert_close(r.centroids, base.centroids)
    valid = M.bool()
    r = delta_coefficients(P, A, M, DeltaConfig(range_map=False))
    torch.testing.assert_close(r.lam[valid], r.scores[valid])
    r = delta_coefficients(P, A, M, DeltaConfig(normalize=False))
    torch.testing.assert_close(r.weights, base.lam)


def test_k0_keeps_initial_centroids_and_k1_moves_them():
    P, A, M = make_batch(seed=12)
    r0, r1 = delta_coefficients(P, A, M, DeltaConfig(K=0)), delta_coefficients(P, A, M)
    torch.testing.assert_close(r0.centroids, r0.initial_centroids)
    torch.testing.assert_close(r1.initial_centroids, r0.initial_centroids)
    assert not torch.allclose(r1.centroids, r1.initial_centroids)
    torch.testing.assert_close(r1.gamma, r0.gamma)  # lagged temperature: gamma^(1) = gamma^(0)


def test_hard_assignment_gives_binary_scores_and_fixed_temperature_is_used():
    P, A, M = make_batch(seed=13)
    r = delta_coefficients(P, A, M, DeltaConfig(assignment="hard"))
    assert set(r.scores.unique().tolist()) <= {0.0, 1.0} and (r.gamma == 0).all()
    r = delta_coefficients(P, A, M, DeltaConfig(temperature=0.25))
    assert torch.equal(r.gamma, torch.tensor([0.25, 0.25], dtype=torch.float64))


def test_within_side_never_uses_the_other_side():
    P, A, M = make_batch(seed=14)
    r = delta_coefficients(P, A, M, DeltaConfig(contrast="within-side"))
    neg = (A < 0)[:, None].expand_as(M) & M.bool()
    P2 = P.clone()
    P2[neg] += 5.0  # move every negative token: positive-side scores must not change
    r2 = delta_coefficients(P2, A, M, DeltaConfig(contrast="within-side"))
    pos = (A > 0)[:, None].expand_as(M) & M.bool()
    torch.testing.assert_close(r.scores[pos], r2.scores[pos])
    assert (r.margins[pos | neg] <= 0).all()
    # the two-sided margin does depend on the other side
    t1, t2 = delta_coefficients(P, A, M), delta_coefficients(P2, A, M)
    assert not torch.allclose(t1.scores[pos], t2.scores[pos])


def test_discriminative_tokens_get_higher_lambda_than_shared_ones():
    g = torch.Generator().manual_seed(0)
    shared = torch.randn(8, 12, 16, generator=g) * 0.3
    disc = torch.randn(8, 4, 16, generator=g) * 0.3
    A = torch.tensor([1.0, -1.0] * 4)
    disc[:, :, 0] += 3 * A[:, None]
    P = torch.cat([shared, disc], 1)
    r = delta_coefficients(P, A, torch.ones(8, 16))
    assert r.lam[:, 12:].mean() > r.lam[:, :12].mean() + 0.15


# --- degenerate batches: valid, never NaN --------------------------------------------------------------------
def _finite(r):
    return all(torch.isfinite(t).all() for t in (r.weights, r.lam, r.scores, r.margins, r.gamma, r.centroids))


@pytest.mark.parametrize("variant", VARIANTS[:1] + [dict(assignment="hard"), dict(range_map=False),
                                                    dict(contrast="within-side"), dict(lam_min=0.0, range_map=True)])
def test_degenerate_batches(variant):
    cfg = DeltaConfig(**variant)
    P, _, M = make_batch(B=4, T=5, seed=15)
    # all advantages zero: weights 1 on every valid token
    r = delta_coefficients(P, torch.zeros(4), M, cfg)
    assert _finite(r) and torch.equal(r.weights, M)
    # one side empty
    r = delta_coefficients(P, torch.tensor([1.0, 0.5, 0.0, 2.0]), M, cfg)
    assert _finite(r) and r.n_neg_tokens == 0 and torch.equal(r.centroids[1], torch.zeros(P.shape[-1]))
    assert abs(r.weights[M.bool()].mean().item() - 1) < 1e-6 or not cfg.normalize
    r = delta_coefficients(P, -torch.tensor([1.0, 0.5, 0.0, 2.0]), M, cfg)
    assert _finite(r) and r.n_pos_tokens == 0
    # a single valid token
    M1 = torch.zeros(4, 5)
    M1[2, 3] = 1
    r = delta_coefficients(P, torch.tensor([1.0, -1.0, 1.0, -1.0]), M1, cfg)
    assert _finite(r) and r.weights[2, 3] == pytest.approx(1.0) and r.weights.sum() == pytest.approx(1.0)
    # an all-zero mask: all weights 0
    r = delta_coefficients(P, torch.tensor([1.0, -1.0, 1.0, -1.0]), torch.zeros(4, 5), cfg)
    assert _finite(r) and (r.weights == 0).all() and r.n_valid_tokens == 0
    # identical proxies everywhere: zero variance
    r = delta_coefficients(torch.ones(4, 5, 3), torch.tensor([1.0, -1.0, 1.0, -1.0]), M, cfg)
    assert _finite(r)


def test_empty_and_single_response_batches():
    r = delta_coefficients(torch.zeros(0, 3, 4), torch.zeros(0), torch.zeros(0, 3))
    assert r.weights.shape == (0, 3)
    r = delta_coefficients(torch.randn(1, 3, 4), torch.tensor([2.0]), torch.ones(1, 3))
    assert _finite(r) and torch.allclose(r.weights.mean(), torch.tensor(1.0))


# --- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, name", [
    ((torch.randn(2, 3), torch.zeros(2), torch.ones(2, 3)), "proxies"),
    ((torch.randint(0, 3, (2, 3, 4)), torch.zeros(2), torch.ones(2, 3)), "proxies"),
    ((torch.randn(2, 3, 4), torch.zeros(3), torch.ones(2, 3)), "advantages"),
    ((torch.randn(2, 3, 4), torch.zeros(2, 4), torch.ones(2, 3)), "advantages"),
    ((torch.randn(2, 3, 4), torch.zeros(2), torch.ones(2, 4)), "mask"),
    ((torch.randn(2, 3, 4), torch.zeros(2), torch.full((2, 3), 0.5)), "mask"),
    ((torch.randn(2, 3, 4), torch.tensor([1.0, float("nan")]), torch.ones(2, 3)), "advantages"),
    ((torch.randn(2, 3, 4), torch.tensor([1.0, float("inf")]), torch.ones(2, 3)), "advantages"),
    ((torch.randn(2, 3, 4).index_put_((torch.tensor(0), torch.tensor(1), torch.tensor(2)), torch.tensor(float("nan"))),
      torch.tensor([1.0, -1.0]), torch.ones(2, 3)), "proxies"),
    ((torch.randn(2, 3, 4).index_put_((torch.tensor(1),), torch.tensor(float("inf"))),
      torch.tensor([0.0, 0.0]), torch.ones(2, 3)), "proxies"),
])
def test_bad_input_names_the_argument(args, name):
    with pytest.raises(ValueError, match=name):
        delta_coefficients(*args)


def test_nan_on_padding_is_allowed():
    P, A, M = make_batch(seed=16)
    P2 = torch.where(M.bool()[..., None], P, float("nan"))
    A2 = A[:, None].expand_as(M).clone()
    A2[~M.bool()] = float("nan")
    torch.testing.assert_close(delta_coefficients(P, A, M).weights, delta_coefficients(P2, A2, M).weights)


@pytest.mark.parametrize("kw, name", [(dict(K=-1), "K"), (dict(K=1.5), "K"), (dict(lam_min=1.3), "lam_min"),
                                      (dict(lam_min=-0.1), "lam_min"), (dict(temperature=-1.0), "temperature"),
                                      (dict(temperature="cold"), "temperature"), (dict(assignment="x"), "assignment"),
                                      (dict(contrast="x"), "contrast"), (dict(eps=0.0), "eps"),
                                      (dict(lam_max=float("nan")), "lam_max"), (dict(normalize=1), "normalize")])
def test_bad_config_names_the_field(kw, name):
    with pytest.raises(ValueError, match=name):
        DeltaConfig(**kw)


# --- dtypes ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_proxies_change_only_by_their_rounding(dtype):
    P, A, M = make_batch(B=8, T=12, d=16, seed=17)
    low = P.to(dtype)
    a = delta_coefficients(low, A, M)  # computed from the bf16 tensor
    b = delta_coefficients(low.double(), A, M)  # the same rounded values, in float64
    torch.testing.assert_close(a.weights, b.weights, atol=1e-5, rtol=1e-5)
    assert a.weights.dtype == torch.float32


# --- streaming -----------------------------------------------------------------------------------------------------
def _stream(batches, cfg=DeltaConfig(), **kw):
    est = StreamingDeltaEstimator(cfg, **kw)
    passes = 0
    while not est.done:
        for b in batches:
            est.update(*b)
        est.end_pass()
        passes += 1
    assert passes == est.n_passes == est.passes_done
    return est.result()


def _split(P, A, M, sizes):
    out, s = [], 0
    for n in sizes:
        # different padded lengths per micro-batch, as a real sampler would give
        T = int(M[s:s + n].sum(1).max().item()) if n else 1
        out.append((P[s:s + n, :T], A[s:s + n], M[s:s + n, :T]))
        s += n
    return out


@pytest.mark.parametrize("variance", ["pass", "gram"])
@pytest.mark.parametrize("variant", [{}, dict(K=0), dict(K=3)])
def test_streaming_equals_in_memory(variance, variant):
    P, A, M = make_batch(B=10, T=11, d=6, seed=18)
    whole = delta_coefficients(P, A, M, DeltaConfig(**variant))
    parts = _stream(_split(P, A, M, [3, 1, 4, 2]), DeltaConfig(**variant), variance=variance, chunk_tokens=5)
    got = torch.zeros_like(whole.weights)
    s = 0
    for p in parts:
        got[s:s + p.weights.shape[0], :p.weights.shape[1]] = p.weights
        s += p.weights.shape[0]
    torch.testing.assert_close(got, whole.weights, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(parts[0].gamma, whole.gamma, atol=1e-8, rtol=1e-5)  # float32 dot products


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) or "default")
def test_streaming_every_variant(variant):
    P, A, M = make_batch(B=6, seed=19)
    whole = delta_coefficients(P, A, M, DeltaConfig(**variant))
    parts = _stream([(P[:2], A[:2], M[:2]), (P[2:], A[2:], M[2:])], DeltaConfig(**variant), variance="pass")
    torch.testing.assert_close(torch.cat([p.weights for p in parts]), whole.weights, atol=1e-6, rtol=1e-6)


def test_streaming_pass_counts():
    P, A, M = make_batch(B=4, seed=20)
    counts = {}
    for name, cfg, var in [("default-pass", DeltaConfig(), "pass"), ("default-gram", DeltaConfig(), "gram"),
                           ("K3-gram", DeltaConfig(K=3), "gram"), ("hard", DeltaConfig(assignment="hard"), "pass"),
                           ("fixed", DeltaConfig(temperature=1.0), "pass"),
                           ("within", DeltaConfig(contrast="within-side"), "auto")]:
        est = StreamingDeltaEstimator(cfg, variance=var)
        est.update(P, A, M)
        counts[name] = est.n_passes
    assert counts == {"default-pass": 4, "default-gram": 3, "K3-gram": 5, "hard": 3, "fixed": 3, "within": 4}
    with pytest.raises(ValueError, match="gram"):
        StreamingDeltaEstimator(DeltaConfig(contrast="within-side"), variance="gram").update(P, A, M)


def test_streaming_rejects_changed_or_missing_micro_batches():
    P, A, M = make_batch(B=4, seed=21)
    est = StreamingDeltaEstimator()
    est.update(P[:2], A[:2], M[:2]); est.update(P[2:], A[2:], M[2:]); est.end_pass()
    with pytest.raises(ValueError, match="differs"):
        est.update(P[2:], A[2:], M[2:])
    est = StreamingDeltaEstimator()
    est.update(P[:2], A[:2], M[:2]); est.update(P[2:], A[2:], M[2:]); est.end_pass()
    est.update(P[:2], A[:2], M[:2])
    with pytest.raises(ValueError, match="micro-batches"):
        est.end_pass()
    with pytest.raises(RuntimeError):
        StreamingDeltaEstimator().result()
    with pytest.raises(ValueError, match="variance"):
        StreamingDeltaEstimator(variance="sometimes")


# --- the plain in-memory estimator (the notebook's step-by-step version) -------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) or "default")
@pytest.mark.parametrize("seed", [0, 1])
def test_plain_estimator_matches_reference(variant, seed):
    P, A, M = make_batch(seed=seed + 30)
    assert_matches_reference(plain_delta_coefficients(P, A, M, DeltaConfig(**variant)), reference_delta(P, A, M, **variant))


def test_plain_estimator_per_token_padding_and_degenerate_batches():
    P, A, M = make_batch(seed=33, per_token=True)
    assert_matches_reference(plain_delta_coefficients(P, A, M), reference_delta(P, A, M))
    P, A, M = make_batch(seed=34)
    P2 = torch.where(M.bool()[..., None], P, float("nan"))  # garbage on padding is ignored
    torch.testing.assert_close(plain_delta_coefficients(P2, A, M).weights, plain_delta_coefficients(P, A, M).weights)
    assert torch.equal(plain_delta_coefficients(P, torch.zeros(len(A)), M).weights, M)  # no side: uniform weights
    assert (plain_delta_coefficients(P, A, torch.zeros_like(M)).weights == 0).all()
    assert plain_delta_coefficients(torch.zeros(0, 3, 4), torch.zeros(0), torch.zeros(0, 3)).weights.shape == (0, 3)
    r = plain_delta_coefficients(P, A.abs() + 1, M)  # one side empty: its centroid is 0, nothing is NaN
    assert r.n_neg_tokens == 0 and (r.centroids[1] == 0).all() and torch.isfinite(r.weights).all()


@pytest.mark.parametrize("args, name", [
    ((torch.randn(2, 3), torch.zeros(2), torch.ones(2, 3)), "proxies"),
    ((torch.randn(2, 3, 4), torch.zeros(3), torch.ones(2, 3)), "advantages"),
    ((torch.randn(2, 3, 4), torch.zeros(2), torch.full((2, 3), 0.5)), "mask"),
    ((torch.randn(2, 3, 4), torch.tensor([1.0, float("nan")]), torch.ones(2, 3)), "advantages"),
    ((torch.full((2, 3, 4), float("inf")), torch.tensor([1.0, -1.0]), torch.ones(2, 3)), "proxies"),
])
def test_plain_estimator_rejects_what_delta_coefficients_rejects(args, name):
    with pytest.raises(ValueError, match=name):
        plain_delta_coefficients(*args)
    with pytest.raises(ValueError, match=name):
        delta_coefficients(*args)


# --- random control --------------------------------------------------------------------------------------------------
def test_random_coefficients():
    M = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    a = random_coefficients(M, 0.5, 1.5, torch.Generator().manual_seed(3))
    b = random_coefficients(M, 0.5, 1.5, torch.Generator().manual_seed(3))
    assert torch.equal(a.weights, b.weights)
    v = M.bool()
    assert ((a.lam[v] >= 0.5) & (a.lam[v] <= 1.5)).all() and (a.weights[~v] == 0).all()
    assert a.weights[v].mean().item() == pytest.approx(1.0, abs=1e-6)
    assert (random_coefficients(torch.zeros(2, 3)).weights == 0).all()
    with pytest.raises(ValueError, match="lam_min"):
        random_coefficients(M, 1.5, 0.5)
    with pytest.raises(ValueError, match="mask"):
        random_coefficients(torch.full((2, 2), 2))


def test_coefficients_are_stop_gradient():
    v = torch.randn(4, 5, 8, requires_grad=True)
    c = delta_coefficients(v, torch.tensor([1., -1, .5, -.5]), torch.ones(4, 5))
    assert not c.weights.requires_grad and not c.lam.requires_grad and not c.centroids.requires_grad


def test_building_blocks_refuse_bad_arguments_by_name():
    # found by an attack on the public functions: an unknown variant name used to fall back silently, a NaN to pass
    from delta_repro.coefficients import margins, range_map, scores, self_normalise, temperature
    d, side = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1, 0, 1])
    with pytest.raises(ValueError, match="assignment"): scores(d, side, torch.ones(2), assignment="bogus")
    with pytest.raises(ValueError, match="contrast"): margins(torch.randn(3, 4), side, torch.randn(2, 4), contrast="bogus")
    for kw in (dict(lam_min=float("nan")), dict(lam_max=float("inf")), dict(lam_min=1.3), dict(lam_min=-0.1)):
        with pytest.raises(ValueError, match="lam_min"): range_map(torch.rand(3), torch.ones(3, dtype=torch.bool), **kw)
    with pytest.raises(ValueError, match="eps"): temperature(d, side, eps=float("nan"))
    with pytest.raises(ValueError, match="eps"): self_normalise(torch.ones(3), torch.ones(3, dtype=torch.bool), eps=-1.0)


def test_a_zero_temperature_takes_the_hard_limit_not_nan():
    from delta_repro.coefficients import scores
    d, side = torch.tensor([0.0, -1.0, 2.0, 0.3]), torch.tensor([1, 0, 1, 0])
    hard = scores(d, side, torch.ones(2), assignment="hard")
    torch.testing.assert_close(scores(d, side, torch.zeros(2)), hard)  # both sides at γ = 0: 1[Δ > 0], Δ = 0 included
    mixed = scores(d, side, torch.tensor([0.0, 2.0]))  # γ₊ = 0 (side POS = 0), γ₋ = 2 (side NEG = 1)
    assert torch.isfinite(mixed).all()
    torch.testing.assert_close(mixed[side == 0], hard[side == 0])
    torch.testing.assert_close(mixed[side == 1], torch.sigmoid(d[side == 1] / 2))
