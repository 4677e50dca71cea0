"""DeltaGRPOTrainer on a tiny Qwen3: equality with TRL's loss, the weights applied, invariance to batching, masks,
degenerate rewards, bad input, every method end to end."""
import math

import pytest
import torch
from transformers import Qwen3ForCausalLM

from delta_repro.coefficients import delta_coefficients
from delta_repro.losses import aggregate_loss, clipped_surrogate, dapo_normalizer, delta_surrogate
from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
from delta_repro.proxies import capture_lm_head_inputs, lm_head_proxy
from delta_repro.trainer import METHODS, DeltaGRPOConfig, DeltaGRPOTrainer, paper_config
from conftest import PAIRS, prefix_reward


def generation_batch(trainer):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps  # set by train() in TRL
    batch = next(iter(trainer.get_train_dataloader()))
    torch.manual_seed(123)
    return batch, trainer._generate_and_score_completions(batch)


def test_loss_equals_trl_dapo_without_credit_assignment(make_trainer):
    tr = make_trainer(credit_assignment="none", steps_per_generation=1)
    _, out = generation_batch(tr)
    g = torch.Generator().manual_seed(0)
    B, T = out["completion_ids"].shape
    inputs = dict(out, old_per_token_logps=None)
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    attn = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    with torch.no_grad():
        logps, _, _ = tr._get_per_token_logps_and_entropies(tr.model, ids, attn, T)
    dev = logps.device  # drawn on CPU (same numbers on every device), used where the trainer is (CPU or CUDA)
    inputs["old_per_token_logps"] = logps + 0.3 * torch.randn(B, T, generator=g).to(dev)  # ratios away from 1: clips active
    inputs["advantages"] = torch.randn(B, generator=g).to(dev)
    trl_loss = tr._compute_loss(tr.model, inputs)
    ours = aggregate_loss(clipped_surrogate(logps, inputs["old_per_token_logps"], inputs["advantages"], 0.2, 0.28, 10.0),
                          out["completion_mask"],
                          normalizer=dapo_normalizer(out["num_items_in_batch"], 1, tr.args.gradient_accumulation_steps,
                                                     tr.args.steps_per_generation))
    assert abs(trl_loss.item() - ours.item()) < 1e-6
    # and with DelTA weights: TRL's loss on Â·λ̄ is Eq. 7's self-normalised surrogate
    P = torch.randn(B, T, 8, generator=g).to(dev)
    c = delta_coefficients(P, inputs["advantages"], out["completion_mask"])
    weighted = dict(inputs, advantages=inputs["advantages"][:, None] * c.weights)
    ell = clipped_surrogate(logps, inputs["old_per_token_logps"], inputs["advantages"], 0.2, 0.28, 10.0)
    eq7 = delta_surrogate(ell, c.lam, out["completion_mask"])
    # TRL's dapo normaliser for one micro-step of a 1-step generation is N: same number
    assert abs(tr._compute_loss(tr.model, weighted).item() - eq7.item()) < 1e-6


def test_weights_applied_equal_delta_coefficients_on_captured_proxies(make_trainer):
    _, plain = generation_batch(make_trainer(credit_assignment="none"))  # same seed: same completions, Â (B,)
    tr = make_trainer(credit_assignment="delta")
    _, out = generation_batch(tr)
    assert torch.equal(plain["completion_ids"], out["completion_ids"])
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    attn = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    T = out["completion_ids"].shape[1]
    # an independent path: an ordinary (unfused) forward pass, the LM-head pre-hook, log-probs at the rollout temperature
    with torch.no_grad(), capture_lm_head_inputs(tr.model) as hidden:
        logits = tr.model(input_ids=ids, attention_mask=attn).logits[:, -T - 1:-1].float() / tr.temperature
    logps = logits.log_softmax(-1).gather(-1, out["completion_ids"][..., None])[..., 0]
    proxies = lm_head_proxy(hidden[0][:, -T - 1:-1], logps)
    expect = delta_coefficients(proxies, plain["advantages"], out["completion_mask"])
    torch.testing.assert_close(out["advantages"], plain["advantages"][:, None] * expect.weights, atol=1e-5, rtol=1e-4)
    assert (plain["advantages"] != 0).any()


def test_no_extra_forward_pass_when_trl_computes_old_logps(make_trainer):
    counts = {}
    for ca in ("none", "delta"):
        for spg in (2, 1):  # 2: TRL computes old log-probs (GA=1 not a multiple of 2); 1: it does not
            tr = make_trainer(credit_assignment=ca, steps_per_generation=spg)
            n = [0]
            h = tr.model.model.register_forward_hook(lambda *a: n.__setitem__(0, n[0] + 1))
            generation_batch(tr)
            h.remove()
            counts[ca, spg] = n[0]
    assert counts["delta", 2] == counts["none", 2]  # proxies from TRL's own pass
    chunks = 1  # the generation batch of 8 completions in micro-batches of 8
    assert counts["delta", 1] == counts["none", 1] + chunks  # exactly one extra pass otherwise


def test_memory_and_recompute_proxy_caches_agree(make_trainer):
    outs = {}
    for cache in ("memory", "recompute"):
        tr = make_trainer(credit_assignment="delta", proxy_cache=cache, per_device_train_batch_size=4)
        _, outs[cache] = generation_batch(tr)
    torch.testing.assert_close(outs["memory"]["completion_ids"], outs["recompute"]["completion_ids"])
    torch.testing.assert_close(outs["memory"]["advantages"], outs["recompute"]["advantages"], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("spg", [2, 1])  # 2: TRL's old-log-prob pass carries the capture; 1: one extra pass
def test_host_proxy_cache_agrees_with_memory_holds_micro_batches_and_adds_no_forward_pass(make_trainer, spg, monkeypatch):
    outs, passes, kept = {}, {}, []
    host_coefficients = DeltaGRPOTrainer._host_coefficients
    def spy(self, captured, *a):
        kept.extend(captured["hidden"])
        return host_coefficients(self, captured, *a)
    monkeypatch.setattr(DeltaGRPOTrainer, "_host_coefficients", spy)
    for cache in ("memory", "host"):
        tr = make_trainer(credit_assignment="delta", proxy_cache=cache, per_device_train_batch_size=4,
                          steps_per_generation=spg, gradient_accumulation_steps=1)
        n = [0]
        h = tr.model.model.register_forward_hook(lambda *a: n.__setitem__(0, n[0] + 1))
        _, outs[cache] = generation_batch(tr)
        h.remove()
        passes[cache] = n[0]
    torch.testing.assert_close(outs["host"]["completion_ids"], outs["memory"]["completion_ids"])
    torch.testing.assert_close(outs["host"]["advantages"], outs["memory"]["advantages"], atol=1e-5, rtol=1e-5)
    assert passes["host"] == passes["memory"]  # the hidden states of the same pass, kept elsewhere
    B, T = outs["host"]["completion_ids"].shape
    # one (b, T, d) tensor per forward micro-batch of 4, in host memory; together the whole generation batch
    assert len(kept) == B // 4 and all(k.device.type == "cpu" and k.shape[:2] == (4, T) for k in kept)
    assert sum(k.shape[0] for k in kept) == B


def _params_after_training(make_trainer, **kw):
    tr = make_trainer(optim="sgd", learning_rate=0.5, max_grad_norm=1e9, lr_scheduler_type="constant", **kw)
    tr.train()
    return torch.cat([p.detach().flatten() for p in tr.model.parameters()])


@pytest.mark.parametrize("ca", ["none", "delta"])
def test_gradients_independent_of_micro_batches_and_accumulation(make_trainer, ca):
    # one optimizer step over the same 8 completions: 1 micro-batch of 8 vs 2 accumulated micro-batches of 4
    a = _params_after_training(make_trainer, credit_assignment=ca, max_steps=1, per_device_train_batch_size=8,
                               gradient_accumulation_steps=1, steps_per_generation=1)
    b = _params_after_training(make_trainer, credit_assignment=ca, max_steps=1, per_device_train_batch_size=4,
                               gradient_accumulation_steps=2, steps_per_generation=2)
    torch.testing.assert_close(a, b, atol=2e-6, rtol=1e-5)
    init = torch.cat([p.detach().flatten() for p in make_trainer().model.parameters()])
    assert (a - init).abs().max() > 1e-3  # the step did move the parameters: the comparison is not vacuous
    # steps_per_generation > gradient_accumulation_steps: 2 optimizer steps per generation batch of 8
    c = _params_after_training(make_trainer, credit_assignment=ca, max_steps=2, per_device_train_batch_size=4,
                               gradient_accumulation_steps=1, steps_per_generation=2)
    d = _params_after_training(make_trainer, credit_assignment=ca, max_steps=2, per_device_train_batch_size=2,
                               gradient_accumulation_steps=2, steps_per_generation=4)
    torch.testing.assert_close(c, d, atol=2e-6, rtol=1e-5)


def test_truncated_completions_are_out_of_numerator_and_denominator(make_trainer):
    tr = make_trainer(credit_assignment="delta", mask_truncated_completions=True, max_completion_length=3)
    _, out = generation_batch(tr)
    m = out["completion_mask"]
    truncated = m.sum(1) == 0
    assert truncated.any(), "the tiny model should run out of its 3-token budget"
    assert int(out["num_items_in_batch"]) == int(m.sum())  # the normaliser counts only kept tokens
    assert (out["advantages"][truncated] == 0).all()
    assert torch.isfinite(out["advantages"]).all()
    loss = tr._compute_loss(tr.model, out)
    assert torch.isfinite(loss)


def test_all_masked_batch_gives_finite_zero_loss(make_trainer):
    tr = make_trainer(credit_assignment="delta", mask_truncated_completions=True, max_completion_length=1,
                      steps_per_generation=1)
    _, out = generation_batch(tr)
    out["completion_mask"] = torch.zeros_like(out["completion_mask"])
    out["num_items_in_batch"] = out["completion_mask"].sum()
    loss = tr._compute_loss(tr.model, out)
    assert torch.isfinite(loss) and loss.item() == 0.0
    loss.backward()


def test_pad_equal_to_eos_keeps_the_real_eos_in_the_mask(make_trainer, toy_ds):
    tk = train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)
    tk.pad_token = tk.eos_token
    model = tiny_causal_lm(tk, "qwen3", hidden_size=32)
    with torch.no_grad():  # make EOS likely so that completions end early
        model.lm_head.weight[tk.eos_token_id] *= 0
        model.lm_head.weight[tk.eos_token_id] += model.model.norm.weight.sign() * 0.5
    tr = make_trainer(model=model, tokenizer=tk, credit_assignment="delta", max_completion_length=6)
    _, out = generation_batch(tr)
    ids, m = out["completion_ids"], out["completion_mask"]
    lengths = m.sum(1)
    ended = lengths < ids.shape[1]
    assert ended.any()
    for i in torch.nonzero(ended).flatten():
        L = int(lengths[i])
        assert ids[i, L - 1] == tk.eos_token_id  # the EOS itself is a valid, trained token
    assert (m.sum(1) >= 1).all()


def test_equal_rewards_give_exactly_zero_advantage(make_trainer):
    # 0.1 is not representable: float32 group means leave a residue TRL would turn into a ~1e-4 advantage
    def constant(completions, **kw):
        return [0.1 + 0.2 for _ in completions]
    for ca in ("none", "delta"):
        tr = make_trainer(reward=constant, credit_assignment=ca)
        _, out = generation_batch(tr)
        assert (out["advantages"] == 0).all()
        assert torch.isfinite(tr._compute_loss(tr.model, out))


def test_nan_reward_is_a_documented_skip(make_trainer):
    def sometimes_nan(completions, answer, **kw):
        r = prefix_reward(completions, answer)
        return [float("nan") if i % 3 == 0 else x for i, x in enumerate(r)]
    tr = make_trainer(reward=sometimes_nan, credit_assignment="delta")
    _, out = generation_batch(tr)
    assert torch.isfinite(out["advantages"]).all()
    assert (out["advantages"][0::3] == 0).all()  # unscorable completions carry no signal (TRL's rule)
    assert torch.isfinite(tr._compute_loss(tr.model, out))


def test_bad_configuration_and_unhookable_model(make_trainer, tok):
    with pytest.raises(ValueError, match="credit_assignment"):
        DeltaGRPOConfig(output_dir="/tmp/x", credit_assignment="delta-ta", use_cpu=True)
    with pytest.raises(ValueError, match="proxy_cache"):
        DeltaGRPOConfig(output_dir="/tmp/x", proxy_cache="disk", use_cpu=True)
    with pytest.raises(ValueError, match="delta_K"):
        DeltaGRPOConfig(output_dir="/tmp/x", delta_K=-1, use_cpu=True)
    with pytest.raises(ValueError, match="delta_temperature"):
        DeltaGRPOConfig(output_dir="/tmp/x", delta_temperature="warm", use_cpu=True)

    class NoHead(Qwen3ForCausalLM):
        def get_output_embeddings(self):
            return None

    model = NoHead(tiny_causal_lm(tok, "qwen3", hidden_size=32).config)
    with pytest.raises(ValueError, match="model"):
        make_trainer(model=model, credit_assignment="delta")
    make_trainer(model=NoHead(model.config), credit_assignment="none")  # plain DAPO does not need the head


def test_max_prompt_length_keeps_the_last_tokens_of_long_prompts(make_trainer, tok):
    # TRL 1.16 has no prompt limit: the field used to be accepted and ignored (issue 21)
    prompts = ["1 + 2 =", "7 + 8 ="]
    full = make_trainer()._tokenize_prompts(prompts)[0]
    assert min(map(len, full)) > 3
    assert make_trainer(max_prompt_length=3)._tokenize_prompts(prompts)[0] == [ids[-3:] for ids in full]
    assert make_trainer(max_prompt_length=100)._tokenize_prompts(prompts)[0] == full  # nothing to cut
    tr = make_trainer(max_prompt_length=3)
    batch, out = generation_batch(tr)  # what the policy is trained on: the last 3 tokens of every prompt
    assert out["prompt_ids"].tolist() == [tok(text=[x["prompt"]])["input_ids"][0][-3:] for x in batch]
    assert out["prompt_mask"].all() and tr._metrics["train"]["prompts/truncated_frac"][-1] == 1.0
    with pytest.raises(ValueError, match="max_prompt_length"):
        DeltaGRPOConfig(output_dir="/tmp/x", max_prompt_length=0, report_to="none", use_cpu=True)


def test_paper_preset_matches_table5():
    c = paper_config("/tmp/x", use_cpu=True, bf16=False)
    assert (c.num_generations, c.learning_rate, c.weight_decay, c.max_grad_norm) == (16, 1e-6, 0.1, 1.0)
    assert (c.max_prompt_length, c.max_completion_length, c.temperature, c.top_p) == (2048, 20480, 1.0, 1.0)
    assert (c.epsilon, c.epsilon_high, c.delta, c.beta, c.loss_type) == (0.2, 0.28, 10.0, 0.0, "dapo")
    assert (c.overlong_buffer, c.overlong_penalty_factor) == (4096, 1.0)
    per_step = c.per_device_train_batch_size * c.gradient_accumulation_steps * 8
    per_generation = c.per_device_train_batch_size * c.steps_per_generation * 8
    assert per_step == 512 and per_generation == 2048 and per_generation // per_step == 4
    with pytest.raises(ValueError, match="divide"):
        paper_config("/tmp/x", num_processes=3, use_cpu=True, bf16=False)
    for kw in (dict(num_processes=0), dict(per_device_train_batch_size=-4), dict(num_processes=2.0), dict(num_processes=True)):
        with pytest.raises(ValueError, match=next(iter(kw))):
            paper_config("/tmp/x", use_cpu=True, bf16=False, **kw)


@pytest.mark.parametrize("field, value", [("fipo_decay", 0.0), ("fipo_decay", float("nan")), ("fipo_clip", -0.1),
                                          ("fipo_safety_ratio", 0.0), ("fipo_chunk", 0), ("fipo_chunk", 2.5),
                                          ("overlong_penalty_factor", -1.0), ("overlong_penalty_factor", float("inf")),
                                          ("overlong_buffer", float("nan")), ("overlong_buffer", 2.5), ("fipo_chunk", True),
                                          ("fipo_decay", "3"), ("fipo_safety_ratio", None),
                                          ("delta_proxy_topk", 1.5), ("delta_proxy_topk", True), ("delta_proxy_topk", "16"),
                                          ("delta_proxy_topk", None), ("delta_proxy_topk", 0),
                                          ("token_selection_ratio", "0.5"), ("token_selection_ratio", None),
                                          ("token_selection_ratio", 0.0), ("token_selection_ratio", 1.5),
                                          ("token_selection_ratio", float("nan"))])
def test_fipo_and_overlong_fields_are_checked_when_the_config_is_made(field, value):
    with pytest.raises(ValueError, match=field):
        DeltaGRPOConfig(output_dir="/tmp/x", use_cpu=True, **{field: value})


def test_overlong_buffer_must_leave_room_for_unpenalised_completions():
    with pytest.raises(ValueError, match="overlong_buffer .* max_completion_length"):
        DeltaGRPOConfig(output_dir="/tmp/x", use_cpu=True, overlong_buffer=16, max_completion_length=16)
    with pytest.raises(ValueError, match="overlong_buffer"):  # the paper's 4096 buffer with a short budget
        paper_config("/tmp/x", use_cpu=True, bf16=False, max_completion_length=1024)
    c = DeltaGRPOConfig(output_dir="/tmp/x", use_cpu=True, overlong_buffer=4, max_completion_length=16,
                        fipo_safety_ratio=float("inf"))  # inf: no safety cut
    assert c.overlong_buffer == 4


METHODS_TO_RUN = ["DAPO", "DAPO w/ Forking Tokens", "SAPO", "GRPO", "FIPO", "DelTA", "Within-side only",
                  "w/o H(α)", "Top-K hidden gradient", "Random λ", "Top-50%", "Bottom-50%", "Placebo", "Oracle premise"]


@pytest.mark.parametrize("method", METHODS_TO_RUN)
def test_five_step_run_per_method(make_trainer, method):
    tr = make_trainer(max_steps=5, **METHODS[method])
    tr.train()
    logs = [l for l in tr.state.log_history if "loss" in l]
    assert len(logs) == 5 and all(math.isfinite(l["loss"]) for l in logs)
    if METHODS[method]["credit_assignment"] in ("delta", "token_selection", "random", "oracle"):
        first = tr.state.log_history[0]
        for key in ("delta/lam_mean", "delta/lam_std", "delta/frac_upweighted", "delta/seconds"):
            assert key in first, key
        if METHODS[method]["credit_assignment"] not in ("random", "oracle"):
            for key in ("delta/gamma_pos", "delta/gamma_neg", "delta/n_pos_tokens", "delta/corr_lam_entropy"):
                assert key in first, key
    if method == "FIPO":
        assert any("fipo/weight_mean" in l for l in tr.state.log_history)


@pytest.mark.parametrize("method", ["DAPO", "DelTA", "Bottom-50%", "Placebo", "Oracle premise"])
def test_every_rollout_batch_logs_the_step_size_diagnostics(make_trainer, method):
    from delta_repro.trainer import credit_diagnostics
    tr = make_trainer(**METHODS[method])
    _, out = generation_batch(tr)
    _, plain = generation_batch(make_trainer(credit_assignment="none"))  # same seed: the same Â (B,)
    logged = {k.removeprefix("credit/"): v[-1] for k, v in tr._metrics["train"].items() if k.startswith("credit/")}
    mask = out["completion_mask"]
    w = out["advantages"] / plain["advantages"][:, None] if out["advantages"].ndim == 2 else torch.ones_like(mask)
    w = torch.where(plain["advantages"][:, None] != 0, w, 0.0)  # the weight where Â != 0 (Â·w / Â)
    expect = credit_diagnostics(plain["advantages"], w.double(), mask, (w > 0) if method == "Bottom-50%" else None)
    assert logged["zero_adv_share"] == pytest.approx(expect["zero_adv_share"]) and "loss_scale" in logged
    assert logged["loss_scale"] == pytest.approx(expect["loss_scale"], rel=1e-5)
    assert ("selected_zero_adv_share" in logged) == (method == "Bottom-50%")


def test_use_vllm_without_vllm_names_the_extra(tmp_path, monkeypatch):
    # TRL's own error names `pip install vllm`; ours names the extra, before TRL builds anything
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    args = DeltaGRPOConfig(output_dir=str(tmp_path), use_vllm=True, use_cpu=True, report_to="none")
    for build in (lambda: DeltaGRPOTrainer(model=None, reward_funcs=[], args=args),
                  lambda: DeltaGRPOTrainer(None, [], args)):  # args by keyword and by position
        with pytest.raises(ImportError, match=r'pip install "delta_repro\[vllm\]"'):
            build()
