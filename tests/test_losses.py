"""Loss functions on hand-made tensors: values, masks, normalisers, Eq. 7, FIPO against a plain loop, token selection."""
import math

import pytest
import torch

from delta_repro.coefficients import delta_coefficients
from delta_repro.losses import (aggregate_loss, clipped_surrogate, dapo_normalizer, delta_surrogate,
                                future_kl_weights, token_selection_weights)


def test_clipped_surrogate_hand_values():
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[0.5, 1.0, 1.5, 20.0]]))
    pos = clipped_surrogate(logp, old, torch.tensor([2.0]), dual_clip=None)
    torch.testing.assert_close(pos, -2 * torch.tensor([[0.5, 1.0, 1.28, 1.28]]))
    neg = clipped_surrogate(logp, old, torch.tensor([-1.0]), dual_clip=10.0)
    # A<0: min(rA, clip(r)A) = -max(r, clip(r)) up to the dual clip c = 10
    torch.testing.assert_close(neg, torch.tensor([[0.8, 1.0, 1.5, 10.0]]))


def test_weights_commute_with_the_min():
    g = torch.Generator().manual_seed(0)
    logp, old = torch.randn(3, 5, generator=g) * 0.3, torch.randn(3, 5, generator=g) * 0.3
    adv, w = torch.randn(3, generator=g), torch.rand(3, 5, generator=g) * 2
    torch.testing.assert_close(clipped_surrogate(logp, old, adv, weights=w), w * clipped_surrogate(logp, old, adv))
    torch.testing.assert_close(clipped_surrogate(logp, old, adv[:, None] * w), w * clipped_surrogate(logp, old, adv))


@pytest.mark.parametrize("kw, name", [(dict(logps=torch.zeros(3)), "logps"), (dict(old_logps=torch.zeros(2, 2)), "old_logps"),
                                      (dict(advantages=torch.zeros(3)), "advantages"), (dict(weights=torch.ones(2)), "weights"),
                                      (dict(epsilon_low=-0.1), "epsilon"), (dict(dual_clip=1.1), "dual_clip"),
                                      (dict(epsilon_low=float("nan")), "epsilon"), (dict(epsilon_high=float("inf")), "epsilon")])
def test_clipped_surrogate_bad_input(kw, name):
    args = dict(logps=torch.zeros(2, 3), old_logps=torch.zeros(2, 3), advantages=torch.zeros(2))
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        clipped_surrogate(**args)


def test_aggregation_modes_and_all_masked_batch():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 0.0, 0.0]], requires_grad=True)
    m = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    assert aggregate_loss(x, m).item() == pytest.approx(21 / 6)
    assert aggregate_loss(x, m, normalizer=12).item() == pytest.approx(21 / 12)
    assert aggregate_loss(x, m, "sequence-mean").item() == pytest.approx((2.5 + 5.5) / 2)
    assert aggregate_loss(x, m, "dr-grpo", max_completion_length=8).item() == pytest.approx(21 / 16)
    z = aggregate_loss(x, torch.zeros(2, 4))
    assert z.item() == 0.0 and torch.isfinite(z)
    z.backward()  # still connected to the graph: an all-masked micro-batch does not break backward()
    assert torch.equal(x.grad, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="mode"):
        aggregate_loss(x, m, "seq")
    with pytest.raises(ValueError, match="normalizer"):
        aggregate_loss(x, m, normalizer=0)
    with pytest.raises(ValueError, match="max_completion_length"):
        aggregate_loss(x, m, "dr-grpo")


def test_token_mean_gradient_is_independent_of_micro_batching():
    g = torch.Generator().manual_seed(1)
    loss = torch.randn(8, 6, generator=g, requires_grad=True)
    m = (torch.rand(8, 6, generator=g) > 0.3).float()
    N = m.sum()
    whole = torch.autograd.grad(aggregate_loss(loss, m, normalizer=N), loss)[0]
    # two accumulation micro-steps over halves, each normalised with TRL's N/P * GA/S, summed
    parts = sum(aggregate_loss(loss[s], m[s], normalizer=dapo_normalizer(N, 1, 2, 2)) for s in (slice(0, 4), slice(4, 8)))
    torch.testing.assert_close(torch.autograd.grad(parts, loss)[0], whole)
    # per-micro-batch token counts would differ: that is the bug the explicit normaliser avoids
    wrong = sum(aggregate_loss(loss[s], m[s]) for s in (slice(0, 4), slice(4, 8))) / 2
    assert not torch.allclose(torch.autograd.grad(wrong, loss)[0], whole)


def test_dapo_normalizer():
    assert dapo_normalizer(1000, num_processes=8, gradient_accumulation_steps=16, steps_per_generation=64) == 1000 / 8 / 4
    assert dapo_normalizer(0) == 1.0
    with pytest.raises(ValueError):
        dapo_normalizer(10, num_processes=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_self_normalised_delta_equals_token_mean_of_lambda_bar(seed):
    g = torch.Generator().manual_seed(seed)
    P, A = torch.randn(6, 7, 5, generator=g), torch.randn(6, generator=g)
    M = (torch.rand(6, 7, generator=g) > 0.2).float()
    c = delta_coefficients(P, A, M)
    ell = torch.randn(6, 7, generator=g)
    torch.testing.assert_close(delta_surrogate(ell, c.lam, M), aggregate_loss(c.weights * ell, M), atol=1e-6, rtol=1e-6)
    expect = (c.lam * ell * M).sum() / (c.lam * M).sum()
    torch.testing.assert_close(delta_surrogate(ell, c.lam, M), expect)
    torch.testing.assert_close(delta_surrogate(ell, c.lam, M, normalize=False), (c.lam * ell * M).sum() / M.sum())
    assert delta_surrogate(ell, c.lam, torch.zeros(6, 7)).item() == 0.0


def _fipo_loop(lr, m, decay=32.0, clip=0.2, high_only=True, safety=10.0):
    g = 2 ** (-1 / decay)
    B, T = lr.shape
    out = torch.ones(B, T)
    for b in range(B):
        for t in range(T):
            if not m[b, t]:
                continue
            F = sum(g ** (k - t) * float(lr[b, k]) for k in range(t, T)
                    if m[b, k] and (safety is None or math.exp(float(lr[b, k])) <= safety))
            out[b, t] = min(max(math.exp(F), 1.0 if high_only else 1 - clip), 1 + clip)
    return out


@pytest.mark.parametrize("T, chunk", [(9, 4), (300, 128), (257, 128)])
def test_future_kl_weights_match_a_plain_loop(T, chunk):
    g = torch.Generator().manual_seed(T)
    lr = torch.randn(2, T, generator=g) * 0.05
    lr[0, 3] = 4.0  # ratio e^4 > 10: excluded by the safety threshold
    m = torch.ones(2, T)
    m[1, T - 3:] = 0
    torch.testing.assert_close(future_kl_weights(lr, m, chunk=chunk), _fipo_loop(lr, m), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(future_kl_weights(lr, m, clip_high_only=False, chunk=chunk),
                               _fipo_loop(lr, m, high_only=False), atol=1e-5, rtol=1e-5)


def test_future_kl_weights_long_sequence_is_finite_and_bounded():
    lr = torch.full((1, 20480), 0.01)
    w = future_kl_weights(lr, torch.ones(1, 20480))
    assert torch.isfinite(w).all() and w.min() >= 1.0 and w.max() <= 1.2 + 1e-6
    with pytest.raises(ValueError, match="decay"):
        future_kl_weights(lr, torch.ones(1, 20480), decay=0)


def test_token_selection_exact_fraction_and_order():
    g = torch.Generator().manual_seed(0)
    lam = torch.rand(6, 10, generator=g) * 0.4 + 0.8
    lam[0] = 0.8  # a block of ties at lam_min
    m = (torch.rand(6, 10, generator=g) > 0.25)
    n = int(m.sum())
    k = round(0.5 * n)
    top = token_selection_weights(lam, m, "top", 0.5, torch.Generator().manual_seed(1))
    bot = token_selection_weights(lam, m, "bottom", 0.5, torch.Generator().manual_seed(1))
    rnd = token_selection_weights(lam, m, "random", 0.5, torch.Generator().manual_seed(1))
    for w in (top, bot, rnd):
        assert int((w > 0).sum()) == k and (w[~m] == 0).all()
        assert float(w.sum()) == pytest.approx(n)  # token-mean over the selected tokens keeps DAPO's scale
    assert lam[top > 0].min() >= lam[m & (top == 0)].max()
    assert lam[bot > 0].max() <= lam[m & (bot == 0)].min()
    assert torch.equal(rnd, token_selection_weights(lam, m, "random", 0.5, torch.Generator().manual_seed(1)))


def test_token_selection_global_ranking_through_gather():
    g = torch.Generator().manual_seed(3)
    lam = torch.rand(8, 5, generator=g) + 0.5
    m = torch.ones(8, 5, dtype=torch.bool)
    whole = token_selection_weights(lam, m, "top", 0.25)
    other = lam[4:][m[4:]].double()  # what the other "process" holds
    part = token_selection_weights(lam[:4], m[:4], "top", 0.25, gather=lambda x: torch.cat([x, other]))
    torch.testing.assert_close(part, whole[:4])
    with pytest.raises(ValueError, match="ratio"):
        token_selection_weights(lam, m, "top", 0.0)
    with pytest.raises(ValueError, match="mode"):
        token_selection_weights(lam, m, "middle")


def test_half_precision_batches_past_65504_tokens_are_not_zeroed():
    from delta_repro.losses import aggregate_loss
    loss = torch.full((1, 70000), 0.01).half()
    assert aggregate_loss(loss, torch.ones(1, 70000)).item() == pytest.approx(0.01, rel=1e-3)
    assert aggregate_loss(loss, torch.ones(1, 70000), normalizer=1e5).item() == pytest.approx(0.007, rel=1e-3)
    with pytest.raises(ValueError, match="normalizer"): aggregate_loss(loss, torch.ones(1, 70000), normalizer=float("inf"))
    with pytest.raises(ValueError, match="max_completion_length"):
        aggregate_loss(loss, torch.ones(1, 70000), mode="dr-grpo", max_completion_length=2.5)


def test_token_selection_rejects_non_finite_lambda():
    from delta_repro.losses import token_selection_weights
    with pytest.raises(ValueError, match="lam"): token_selection_weights(torch.tensor([[float("nan"), .5, .7, .9]]), torch.ones(1, 4))
    # NaN on padding is fine
    w = token_selection_weights(torch.tensor([[float("nan"), .5, .7, .9]]), torch.tensor([[0., 1, 1, 1]]), ratio=1 / 3)
    assert w.tolist() == [[0.0, 0.0, 0.0, 3.0]]
