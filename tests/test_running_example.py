"""The running example of nbs/00_proxies … 03_trainer: a real group from a tiny policy, its proxies, and the plain
DAPO + DelTA step of 03_trainer, which must give the loss `DeltaGRPOTrainer` computes through TRL on the same group."""
import copy
import warnings

import pytest
import torch
from datasets import Dataset

from delta_repro.coefficients import delta_coefficients
from delta_repro.proxies import capture_lm_head_inputs, completion_proxies, lm_head_proxy, running_example
from delta_repro.rewards import math_reward
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer, plain_delta_loss


@pytest.fixture(scope="module")
def ex():
    return running_example()  # trains the tiny policy once per machine (cached), then about a second


def test_the_group_has_both_outcomes_and_trl_advantages(ex):
    G, T = ex.completion_ids.shape
    assert G == len(ex.completions) == 8 and 0 < ex.rewards.sum() < G
    assert ex.rewards.tolist() == math_reward(ex.completions, [ex.answer] * G)
    assert ex.answer == str(eval(ex.prompt.rstrip("=")))  # the reference answer of "a + b + c ="
    r = ex.rewards.double()
    torch.testing.assert_close(ex.advantages.double(), (r - r.mean()) / (r.std() + 1e-4), atol=1e-6, rtol=1e-6)
    eos = ex.tokenizer.eos_token_id
    for ids, m in zip(ex.completion_ids, ex.completion_mask):  # valid up to and including the first eos, pad after
        n = int(m.sum())
        assert m[:n].all() and not m[n:].any() and (ids[n:] == ex.tokenizer.pad_token_id).all()
        assert eos not in ids[:n - 1].tolist()
    assert ex.input_ids.shape == ex.attention_mask.shape == (G, len(ex.prompt_ids) + T)
    again = running_example()  # deterministic
    assert again.prompt == ex.prompt and torch.equal(again.completion_ids, ex.completion_ids)


def test_running_example_refuses_a_group_of_one():
    with pytest.raises(ValueError, match="group_size"):
        running_example(group_size=1)


def test_completion_proxies_are_the_lm_head_proxies_of_the_completion_tokens(ex):
    T = ex.completion_ids.shape[1]
    v, logp, h = completion_proxies(ex.model, ex.input_ids, ex.attention_mask, T)
    with torch.no_grad(), capture_lm_head_inputs(ex.model) as hidden:
        logits = ex.model(input_ids=ex.input_ids, attention_mask=ex.attention_mask).logits
    want_logp = logits[:, -T - 1:-1].float().log_softmax(-1).gather(-1, ex.completion_ids[..., None])[..., 0]
    torch.testing.assert_close(logp, want_logp)
    torch.testing.assert_close(h, hidden[0][:, -T - 1:-1])
    torch.testing.assert_close(v, lm_head_proxy(hidden[0][:, -T - 1:-1], want_logp))
    with pytest.raises(ValueError, match="n_completion"):
        completion_proxies(ex.model, ex.input_ids, ex.attention_mask, ex.input_ids.shape[1])
    with pytest.raises(ValueError, match="attention_mask"):
        completion_proxies(ex.model, ex.input_ids, ex.attention_mask[:, 1:], T)


def _trainer_batch(ex, **kw):
    "One generation batch of DeltaGRPOTrainer on the running example (its completions replayed by rollout_func)."
    G, T = ex.completion_ids.shape
    ids = [c[m.bool()].tolist() for c, m in zip(ex.completion_ids, ex.completion_mask)]
    replay = lambda prompts, trainer: {"prompt_ids": [ex.prompt_ids.tolist()] * len(prompts),
                                       "completion_ids": ids[:len(prompts)], "logprobs": None}
    args = DeltaGRPOConfig(output_dir="/tmp/delta_example_test", num_generations=G, per_device_train_batch_size=G,
                           steps_per_generation=1, max_completion_length=T, loss_type="dapo", epsilon=0.2,
                           epsilon_high=0.28, delta=10.0, beta=0.0, max_steps=1, report_to="none", use_cpu=True,
                           bf16=False, save_strategy="no", disable_tqdm=True, seed=0, **kw)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
        tr = DeltaGRPOTrainer(model=copy.deepcopy(ex.model), reward_funcs=math_reward, args=args, rollout_func=replay,
                              train_dataset=Dataset.from_list([{"prompt": ex.prompt, "answer": ex.answer}]),
                              processing_class=ex.tokenizer)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    batch = tr._generate_and_score_completions(next(iter(tr.get_train_dataloader())))
    return tr, batch


@pytest.mark.parametrize("credit_assignment", ["delta", "none"])
def test_plain_step_equals_the_trainer_loss_on_the_same_batch(ex, credit_assignment):
    T = ex.completion_ids.shape[1]
    tr, batch = _trainer_batch(ex, credit_assignment=credit_assignment)
    assert torch.equal(batch["completion_ids"].cpu(), ex.completion_ids)
    policy = copy.deepcopy(ex.model).train()
    v, old, _ = completion_proxies(policy, ex.input_ids, ex.attention_mask, T)
    weights = delta_coefficients(v, ex.advantages, ex.completion_mask).weights if credit_assignment == "delta" else None
    plain, logps = plain_delta_loss(policy, ex.input_ids, ex.attention_mask, ex.completion_mask, ex.advantages,
                                    weights, old)
    trainer_loss = tr._compute_loss(tr.model, batch)
    torch.testing.assert_close(trainer_loss, plain.detach(), atol=1e-6, rtol=1e-5)
    if credit_assignment == "delta":  # the weights matter: the loss without them is another number
        unweighted, _ = plain_delta_loss(policy, ex.input_ids, ex.attention_mask, ex.completion_mask, ex.advantages)
        assert abs(unweighted.item() - trainer_loss.item()) > 1e-3
        torch.testing.assert_close(batch["advantages"], ex.advantages[:, None] * weights, atol=1e-5, rtol=1e-5)
    # the gradients agree too
    (g_plain,) = torch.autograd.grad(plain, [p for n, p in policy.named_parameters() if n == "lm_head.weight"])
    tr.model.zero_grad()
    tr._compute_loss(tr.model, batch).backward()
    torch.testing.assert_close(tr.model.lm_head.weight.grad, g_plain, atol=1e-6, rtol=1e-4)


def test_plain_delta_loss_refuses_mismatched_shapes(ex):
    with pytest.raises(ValueError, match="attention_mask"):
        plain_delta_loss(ex.model, ex.input_ids, ex.attention_mask[:, 1:], ex.completion_mask, ex.advantages)
    with pytest.raises(ValueError, match="input_ids"):
        plain_delta_loss(ex.model, ex.input_ids[:, :3], ex.attention_mask[:, :3], ex.completion_mask, ex.advantages)
