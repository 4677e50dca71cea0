"""A run interrupted and resumed equals the uninterrupted run (issue 48, item 2) — when it resumes at a rollout-batch
boundary. TRL generates a rollout batch every `steps_per_generation` optimizer steps and keeps it in memory, not in the
checkpoint, so a run resumed inside a batch samples a new one there: that is why `experiments.save_interval` keeps
checkpoints at batch boundaries."""
import pytest
import torch
from transformers import TrainerCallback

from delta_repro.experiments import save_interval


class _Stop(TrainerCallback):
    "Stop training after optimizer step `k` (the checkpoint of step k is written first): an interruption."
    def __init__(self, k): self.k = k
    def on_step_end(self, args, state, control, **kw):
        if state.global_step == self.k: control.should_training_stop = True


def _params(tr): return torch.cat([p.detach().flatten().double() for p in tr.model.parameters()])


def _rewards(tr): return [h["reward"] for h in tr.state.log_history if "reward" in h]


def _interrupted_and_resumed(make_trainer, tmp_path, k, **kw):
    "(uninterrupted, resumed) trainers of 8 steps, 2 per rollout batch; the second stopped after step k and resumed."
    full = make_trainer(max_steps=8, **kw)  # saves nothing (the suite's save_strategy "no")
    full.train()
    part = make_trainer(max_steps=8, save_strategy="steps", save_steps=k, **kw)
    part.add_callback(_Stop(k))
    part.train()
    assert part.state.global_step == k
    again = make_trainer(max_steps=8, save_strategy="steps", save_steps=k, **kw)
    again.train(resume_from_checkpoint=str(tmp_path / "out" / f"checkpoint-{k}"))  # make_trainer's output_dir
    return full, again


@pytest.mark.parametrize("credit_assignment", ["none", "delta"])
def test_resumed_at_a_rollout_batch_boundary_equals_the_uninterrupted_run(make_trainer, tmp_path, credit_assignment):
    full, again = _interrupted_and_resumed(make_trainer, tmp_path, 4, credit_assignment=credit_assignment)
    assert torch.equal(_params(full), _params(again))  # bit for bit
    assert _rewards(full) == _rewards(again) and len(_rewards(full)) == 4  # the same completions, scored alike


def test_resumed_inside_a_rollout_batch_leaves_the_trajectory(make_trainer, tmp_path):
    full, again = _interrupted_and_resumed(make_trainer, tmp_path, 3, credit_assignment="none")
    assert len(_rewards(again)) == 5  # a fifth rollout batch, sampled at step 3 where the lost one was half used
    assert not torch.equal(_params(full), _params(again))


@pytest.mark.parametrize("every, spg, want", [(25, 4, 24), (24, 4, 24), (3, 4, 4), (16, 4, 16), (1, 1, 1), (150, 4, 148)])
def test_save_interval_is_a_multiple_of_the_rollout_batch(every, spg, want):
    assert save_interval(every, spg) == want and want % spg == 0


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_save_interval_refuses_bad_input_by_name(bad):
    with pytest.raises(ValueError, match="every"):
        save_interval(bad, 4)
    with pytest.raises(ValueError, match="steps_per_generation"):
        save_interval(8, bad)
