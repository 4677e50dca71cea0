"""What a loss scale does under the trainer's optimizer (issue 48, item 1). AdamW divides each update by the running
RMS of the gradients, so a constant factor on the loss cancels (up to ε and up to the steps where it moves the gradient
norm across the clipping threshold): DelTA's mean weight over tokens with Â ≠ 0 (1.12-1.15 on SmolLM2) is not a
larger step. What a per-rollout-batch factor can change is the weight of one batch against another in Adam's moments."""
import math

import pytest
import torch
from transformers import TrainerCallback


def _train(make_trainer, steps=12, callback=None, **kw):
    tr = make_trainer(max_steps=steps, **kw)
    if callback is not None: tr.add_callback(callback(tr))
    tr.train()
    params = torch.cat([p.detach().flatten().double() for p in tr.model.parameters()])
    rewards = [h["reward"] for h in tr.state.log_history if "reward" in h]
    return params, rewards, tr


def _relative(a, b): return float((a - b).norm() / b.norm())


def test_a_constant_loss_scale_leaves_the_adamw_trajectory_unchanged(make_trainer):
    base, r_base, t0 = _train(make_trainer, credit_assignment="none")
    scaled, r_scaled, t1 = _train(make_trainer, credit_assignment="constant", loss_scale=1.15)
    start = torch.cat([p.detach().flatten().double() for p in make_trainer().model.parameters()])
    moved = _relative(base, start)
    # 12 optimizer steps on 6 rollout batches: the same completions were sampled and rewarded in every one
    assert len(r_base) == 6 and r_base == r_scaled
    assert _relative(scaled, base) < 1e-4  # the parameters agree within 1e-4 relative
    assert _relative(scaled, base) < 1e-3 * moved  # three orders below how far training moved them
    # the scale did reach the loss: the logged weight is 1.15 and the logged loss is 1.15 times DAPO's
    assert [h["credit/loss_scale"] for h in t1.state.log_history if "credit/loss_scale" in h] == [pytest.approx(1.15)] * 6
    l0 = [h["loss"] for h in t0.state.log_history if "loss" in h]
    l1 = [h["loss"] for h in t1.state.log_history if "loss" in h]
    assert l1[0] == pytest.approx(1.15 * l0[0], rel=1e-4)


class _Alternate(TrainerCallback):
    "Loss scale 1.0 on even steps and 2.0 on odd ones: a factor that changes from one rollout batch to the next."
    def __init__(self, tr): self.tr = tr
    def on_step_begin(self, args, state, control, **kw):
        self.tr.args.loss_scale = 1.0 if (state.global_step // self.tr.args.steps_per_generation) % 2 == 0 else 2.0


def test_a_factor_that_varies_between_rollout_batches_does_change_it(make_trainer):
    # without gradient clipping: on this tiny policy every gradient norm is above 1, and clipping each one to norm 1
    # would remove a per-batch factor as well
    kw = dict(max_grad_norm=1e9)
    base, _, _ = _train(make_trainer, credit_assignment="none", **kw)
    start = torch.cat([p.detach().flatten().double() for p in make_trainer().model.parameters()])
    varied, _, _ = _train(make_trainer, callback=_Alternate, credit_assignment="constant", loss_scale=1.0, **kw)
    scaled, _, _ = _train(make_trainer, credit_assignment="constant", loss_scale=1.15, **kw)
    moved = _relative(base, start)
    assert _relative(varied, base) > 100 * _relative(scaled, base)  # the batch-to-batch weight matters; the scale not
    assert _relative(varied, base) > 1e-3 * moved
