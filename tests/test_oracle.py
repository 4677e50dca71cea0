"""The oracle of the premise (delta_repro.oracle, nbs/03b_oracle.ipynb) and the placebo, on hand-labelled completions
and through DeltaGRPOTrainer with replayed rollouts (the weights the trainer applies equal an independent recomputation)."""
import warnings

import pytest
import torch
from datasets import Dataset

from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
from delta_repro.oracle import chain_terms, decisive_spans, oracle_scores, oracle_weights, running_totals, token_offsets
from delta_repro.trainer import METHODS, DeltaGRPOConfig, DeltaGRPOTrainer

Q = "6 + 5 - 1 + 7 ="
GOOD = r"6+5=11, 11-1=10, 10+7=17, so \boxed{17}"
SLIP = r"6+5=11, 11-1=12, 12+7=19, so \boxed{19}"


def labelled(question, completion, correct):
    return [(completion[s:e], c) for s, e, c in decisive_spans(question, completion, correct)]


@pytest.mark.parametrize("question, completion, correct, want", [
    (Q, GOOD, True, [("11", "running total"), ("10", "running total"), ("17", "running total"), ("17", "final answer")]),
    (Q, SLIP, False, [("12", "first wrong total"), ("19", "final answer")]),  # the right 11 and the later 19: shared
    (Q, r"\boxed{17}", True, [("17", "final answer")]),
    (Q, r"\boxed{18}", False, [("18", "final answer")]),
    (Q, r"6+5=11, 11-1=10, 10+7=17, so \boxed{18}", False, [("18", "final answer")]),  # every total right, the box wrong
    (Q, "6+5=12, 12-1=11, 11+7=18, so \\boxed{18}", False, [("12", "first wrong total"), ("18", "final answer")]),
    (Q, "6+5=11, 11-1=10, 10+", False, []),  # cut off: nothing decisive
    (Q, r"6+5-1+7=17, so \boxed{17}", True, [("17", "running total"), ("17", "final answer")]),
    (Q, r"6+5=11-1=10+7=17, so \boxed{17}", True,
     [("11", "running total"), ("10", "running total"), ("17", "running total"), ("17", "final answer")]),
    (Q, r"6+5=11-1=9+7=16, so \boxed{16}", False, [("9", "first wrong total"), ("16", "final answer")]),
    ("0 - 4 - 8 - 7 =", r"0-4=-4, -4-8=-12, -12-7=-19, so \boxed{-19}", True,
     [("-4", "running total"), ("-12", "running total"), ("-19", "running total"), ("-19", "final answer")]),
    ("1 - 5 - 2 =", r"1-5=-5, -5-2=-7, so \boxed{-7}", False, [("-5", "first wrong total"), ("-7", "final answer")]),
    ("4 - 1 - 7 =", r"4-1=3, 3-7=0, so \boxed{0}", False, [("0", "first wrong total"), ("0", "final answer")]),
    (Q, "6+5=11, 11-1=10, 10+7=17, 17+2=19, so \\boxed{19}", False,  # a total past the chain's end is wrong
     [("19", "first wrong total"), ("19", "final answer")]),
])
def test_decisive_spans_hand_labelled(question, completion, correct, want):
    assert labelled(question, completion, correct) == want


def test_running_totals_cover_the_terms_their_left_sides_name():
    assert [(t["covered"], t["right"]) for t in running_totals(Q, GOOD)] == [(2, True), (3, True), (4, True)]
    assert [(t["covered"], t["right"]) for t in running_totals(Q, SLIP)] == [(2, True), (3, False), (4, False)]
    assert chain_terms("  -3 + 4 − 2 = ") == [-3, 4, -2]


@pytest.mark.parametrize("bad", [None, 3, "", "no chain", "6 + 5", "= 3"])
def test_a_question_without_a_chain_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="question"):
        chain_terms(bad)


def test_a_completion_that_is_not_text_is_refused_by_name():
    with pytest.raises(ValueError, match="completion"):
        running_totals(Q, None)


@pytest.fixture(scope="module")
def tok():
    corpus = [GOOD, SLIP, r"\boxed{17}", r"0-4=-4, -4-8=-12, -12-7=-19, so \boxed{-19}", Q] * 20
    return train_bpe_tokenizer(corpus, vocab_size=300)


def _batch(tok, completions):
    enc = [tok(c, add_special_tokens=False)["input_ids"] for c in completions]
    T = max(map(len, enc))
    ids = torch.tensor([e + [tok.pad_token_id] * (T - len(e)) for e in enc])
    mask = torch.tensor([[1] * len(e) + [0] * (T - len(e)) for e in enc])
    return ids, mask


def test_token_offsets_tile_the_decoded_text(tok):
    ids = tok(GOOD, add_special_tokens=False)["input_ids"]
    spans = token_offsets(tok, ids)
    text = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])) and token_offsets(tok, []) == []


def test_oracle_scores_mark_exactly_the_tokens_of_the_decisive_spans(tok):
    ids, mask = _batch(tok, [GOOD, SLIP, GOOD, SLIP])
    adv = torch.tensor([1.0, -1.0, 0.0, 0.0])  # the last two in a tied group: no credit
    alpha = oracle_scores([{"question": Q}] * 4, ids, adv, mask, tok)
    for i, (comp, correct) in enumerate([(GOOD, True), (SLIP, False)]):
        spans = decisive_spans(Q, tok.decode(ids[i][mask[i].bool()], skip_special_tokens=False), correct)
        offs = token_offsets(tok, ids[i][mask[i].bool()].tolist())
        want = [float(any(a < e and s < b for s, e, _ in spans)) for a, b in offs]
        assert alpha[i][mask[i].bool()].tolist() == want and sum(want) > 0
    assert alpha[2:].eq(0).all() and alpha[~mask.bool()].eq(0).all()
    # the question may come from a chat prompt as well
    chat = [{"prompt": [{"role": "user", "content": Q}]}] * 4
    assert torch.equal(oracle_scores(chat, ids, adv, mask, tok), alpha)


def test_oracle_weights_are_delta_range_and_normaliser():
    alpha = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    w, lam = oracle_weights(alpha, mask, 0.8, 1.2)
    torch.testing.assert_close(lam, torch.tensor([[1.2, 0.8, 0.8], [0.8, 1.2, 0.0]]))
    Z, N = 1.2 * 2 + 0.8 * 3, 5  # hand-computed: λ̄ = λ·N/Z
    torch.testing.assert_close(w, torch.tensor([[1.2, 0.8, 0.8], [0.8, 1.2, 0.0]]) * (N / Z))
    w0, _ = oracle_weights(torch.zeros(2, 3), torch.zeros(2, 3))  # no valid token: no NaN
    assert torch.isfinite(w0).all() and w0.eq(0).all()
    raw, lam2 = oracle_weights(alpha, mask, 0.5, 1.5, normalize=False)
    assert torch.equal(raw, lam2) and raw[0, 0] == 1.5


def test_oracle_scores_refuse_mismatched_inputs(tok):
    ids, mask = _batch(tok, [GOOD, SLIP])
    with pytest.raises(ValueError, match="inputs"):
        oracle_scores([{"question": Q}], ids, torch.ones(2), mask, tok)
    with pytest.raises(ValueError, match="mask"):
        oracle_scores([{"question": Q}] * 2, ids, torch.ones(2), mask[:, :-1], tok)
    with pytest.raises(ValueError, match="question"):
        oracle_scores([{"prompt": 3}] * 2, ids, torch.ones(2), mask, tok)


def _replay_trainer(tok, completions, method, tmp_path):
    "A trainer whose rollouts are `completions` (TRL's rollout_func), rewarded 1 when the box holds 17."
    enc = [tok(c, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for c in completions]

    def replay(prompts, trainer):
        p = tok(Q, add_special_tokens=False)["input_ids"]
        return {"prompt_ids": [p] * len(prompts), "completion_ids": enc[:len(prompts)], "logprobs": None}

    def reward(completions, **kw): return [1.0 if r"\boxed{17}" in c else 0.0 for c in completions]
    args = DeltaGRPOConfig(output_dir=str(tmp_path / method), num_generations=4, per_device_train_batch_size=4,
                           steps_per_generation=1, max_completion_length=32, max_steps=1, report_to="none", use_cpu=True,
                           bf16=False, save_strategy="no", disable_tqdm=True, seed=0, beta=0.0, **METHODS[method])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
        torch.manual_seed(0)
        return DeltaGRPOTrainer(model=tiny_causal_lm(tok, "qwen3", hidden_size=32), reward_funcs=reward, args=args,
                                processing_class=tok, rollout_func=replay,
                                train_dataset=Dataset.from_list([{"prompt": Q, "question": Q}] * 4))


def _generation_batch(tok, completions, method, tmp_path):
    tr = _replay_trainer(tok, completions, method, tmp_path)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    return tr, tr._generate_and_score_completions(next(iter(tr.get_train_dataloader())))


@pytest.mark.parametrize("method", ["Oracle premise", "Placebo"])
def test_the_trainer_applies_the_arm_s_weights(tok, tmp_path, method):
    completions = [GOOD, SLIP, r"\boxed{17}", r"6+5=12, 12-1=11, 11+7=18, so \boxed{18}"]
    _, dapo = _generation_batch(tok, completions, "DAPO", tmp_path)
    tr, out = _generation_batch(tok, completions, method, tmp_path)
    adv, mask = dapo["advantages"], out["completion_mask"]  # TRL's Â (B,): rewards 1, 0, 1, 0
    assert adv.ndim == 1 and (adv[[0, 2]] > 0).all() and (adv[[1, 3]] < 0).all()
    w = out["advantages"] / adv[:, None]  # the weight the arm gives each token
    if method == "Placebo":
        assert torch.allclose(w[mask.bool()], torch.tensor(1.15)) and w[~mask.bool()].eq(0).all()
    else:
        alpha = oracle_scores([{"question": Q}] * 4, out["completion_ids"], adv, mask, tok)
        want, _ = oracle_weights(alpha, mask)
        torch.testing.assert_close(w, want, atol=1e-6, rtol=1e-5)
        assert (alpha.sum(1) > 0).all()  # every completion has decisive tokens: totals or the answer
        assert "delta/lam_mean" in {k for k in tr._metrics["train"]}
    assert tr._metrics["train"]["credit/loss_scale"][-1] == pytest.approx(float(w[mask.bool()].mean()), rel=1e-5)


@pytest.mark.parametrize("method", ["DAPO", "DelTA", "Placebo", "Oracle premise"])
def test_every_arm_logs_its_weight_on_the_oracle_classes(tok, tmp_path, method):
    from delta_repro.oracle import class_weights
    completions = [GOOD, SLIP, r"\boxed{17}", r"6+5=12, 12-1=11, 11+7=18, so \boxed{18}"]
    _, dapo = _generation_batch(tok, completions, "DAPO", tmp_path)
    tr = _replay_trainer(tok, completions, method, tmp_path)
    tr.args.credit_classes = "chain_sum"
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    out = tr._generate_and_score_completions(next(iter(tr.get_train_dataloader())))
    adv, mask = dapo["advantages"], out["completion_mask"]
    w = out["advantages"] / adv[:, None] if out["advantages"].ndim == 2 else torch.ones(mask.shape)  # DAPO: Â (B,)
    cw = class_weights(oracle_scores([{"question": Q}] * 4, out["completion_ids"], adv, mask, tok), w, adv, mask)
    logged = {k.removeprefix("classes/"): v[-1] for k, v in tr._metrics["train"].items() if k.startswith("classes/")}
    assert set(logged) == {k for k, (_, n) in cw.items() if n}
    for k, v in logged.items():
        assert v == pytest.approx(cw[k][0] / cw[k][1], rel=1e-6)
    if method == "DAPO": assert all(v == pytest.approx(1.0) for v in logged.values())
    if method == "Oracle premise": assert logged["decisive_correct"] > logged["shared_correct"]


def test_credit_classes_is_checked_by_name():
    with pytest.raises(ValueError, match="credit_classes"):
        DeltaGRPOConfig(output_dir="/tmp/x", use_cpu=True, credit_classes="gsm8k")


def test_logging_the_classes_leaves_training_unchanged(make_trainer):
    runs = []
    for classes in ("none", "chain_sum"):
        tr = make_trainer(max_steps=4, credit_assignment="delta", credit_classes=classes)
        tr.train()
        runs.append((torch.cat([p.detach().flatten() for p in tr.model.parameters()]),
                     [h for h in tr.state.log_history if "classes/shared_correct" in h or "classes/shared_wrong" in h]))
    assert torch.equal(runs[0][0], runs[1][0])  # bit for bit
    assert not runs[0][1] and runs[1][1]  # logged only when asked
