"""The running example of nbs/00_proxies … 03_trainer: a real group of the cpu profile's shipped warm-started policy on
a training problem, the two tokens the notebooks follow, its proxies, the plain DAPO + DelTA step of 03_trainer, which
must give the loss `DeltaGRPOTrainer` computes through TRL on the same group, and the plain loop of 03_trainer."""
import copy
import warnings
from pathlib import Path

import pytest
import torch
from datasets import Dataset

from delta_repro.coefficients import delta_coefficients
from delta_repro.data import problem_key, split_of
from delta_repro.proxies import (WARM_START, capture_lm_head_inputs, completion_proxies, lm_head_proxy,
                                 running_example, sample_completions, warm_started_policy)
from delta_repro.rewards import math_reward
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer, plain_delta_loss, plain_rl_run


@pytest.fixture(scope="module")
def ex():
    return running_example()  # unpacks the shipped warm start once per machine (cached), then a few seconds


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


def test_the_example_is_a_training_problem_of_the_shipped_warm_start(ex):
    assert split_of(problem_key(ex.prompt)) == "train"  # never a held-out problem
    path = warm_started_policy()
    assert (path / "model.safetensors").is_file() and (path / "warm_start.json").is_file()
    assert sum(p.numel() for p in ex.model.parameters()) > 500_000  # the profile's ~1M-parameter policy, not a toy


def test_warm_started_policy_names_a_missing_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="'no-such-policy'.*pip package ships only.*reproduce.sh"):
        warm_started_policy("no-such-policy")


def test_the_package_ships_the_default_warm_start_and_says_how_to_get_it_back(tmp_path, monkeypatch):
    import delta_repro
    import delta_repro.proxies as proxies

    # inside the package (what the wheel carries), not only beside it in the clone
    assert proxies.warm_start_archives()[WARM_START].parent == Path(delta_repro.__file__).parent / "data" / "warm_starts"
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path))
    monkeypatch.setattr(proxies, "warm_start_archives", lambda: {})  # an installation that lost it
    with pytest.raises(FileNotFoundError, match="pip install --force-reinstall --no-deps delta_repro") as e:
        warm_started_policy()
    assert "/" not in str(e.value)  # what to run, not a path inside site-packages


def test_the_followed_tokens_are_where_the_pair_first_differs_and_the_shared_so(ex):
    f = ex.followed()
    c, w, t = f["correct"], f["wrong"], f["decisive"]
    assert ex.rewards[c] == 1 and ex.rewards[w] == 0
    tc, tw = ex.tokens(c), ex.tokens(w)
    assert tc[:t] == tw[:t] and tc[t] != tw[t]  # the longest common prefix ends at the decisive token
    for i in (c, w):
        assert ex.tokens(i)[f["shared"][i]].strip() == "so"
    others = [j for j in range(len(ex.completions)) if ex.rewards[j] == 0]
    prefix = lambda j: next((k for k, (x, y) in enumerate(zip(tc, ex.tokens(j))) if x != y), 0)
    assert t == max(prefix(j) for j in others)  # no wrong completion shares a longer prefix


def test_sample_completions_cuts_after_the_first_eos_and_is_deterministic(ex):
    tok = ex.tokenizer
    out = sample_completions(ex.model, tok, ["7 + 5 - 3 =", "4 - 5 + 4 + 2 + 8 ="], 3, max_new_tokens=40, seed=1)
    p_ids, p_mask, ids, mask, texts = out
    assert p_ids.shape[0] == ids.shape[0] == 6 and len(texts) == 6 and p_ids.shape == p_mask.shape
    assert (p_mask[:3] == p_mask[0]).all() and p_mask[0, 0] == 0 < p_mask[3, 0]  # the shorter prompt is left-padded
    for row, m in zip(ids, mask):
        n = int(m.sum())
        assert m[:n].all() and not m[n:].any() and (row[n:] == tok.pad_token_id).all()
        assert tok.eos_token_id not in row[:n - 1].tolist()
    again = sample_completions(ex.model, tok, ["7 + 5 - 3 =", "4 - 5 + 4 + 2 + 8 ="], 3, max_new_tokens=40, seed=1)
    assert torch.equal(again[2], ids) and again[4] == texts
    state = torch.random.get_rng_state()
    sample_completions(ex.model, tok, ["7 + 5 - 3 ="], 2, max_new_tokens=8, seed=2)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global RNG is left as it was


def test_plain_rl_run_steps_both_methods_from_the_same_first_batch(ex):
    prompts, answers = ["7 + 5 - 3 =", "4 - 5 + 4 + 2 + 8 ="], ["9", "13"]
    runs = {}
    for method in ("none", "delta"):
        policy = copy.deepcopy(ex.model)
        before = [p.detach().clone() for p in policy.parameters()]
        runs[method] = plain_rl_run(policy, ex.tokenizer, prompts, answers, method, steps=2, prompts_per_step=2,
                                    num_generations=4, learning_rate=1e-4)
        assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))  # it trained
    assert [r["step"] for r in runs["delta"]] == [0, 1]
    assert runs["none"][0]["reward"] == runs["delta"][0]["reward"]  # the same first rollout batch
    assert all(r["loss_scale"] == 1.0 for r in runs["none"])  # DAPO: every weight 1
    assert all(0.8 <= r["loss_scale"] <= 1.25 for r in runs["delta"])
    with pytest.raises(ValueError, match="credit_assignment"):
        plain_rl_run(ex.model, ex.tokenizer, prompts, answers, "fipo", steps=1)
    with pytest.raises(ValueError, match="answers"):
        plain_rl_run(ex.model, ex.tokenizer, prompts, answers[:1], steps=1)
