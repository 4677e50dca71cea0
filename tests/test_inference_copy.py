"""Sampling from a half-precision copy of the policy (experiments.inference_copy): selection and evaluation may sample
from a bf16 copy while training keeps its float32 master weights."""
import pytest
import torch

from delta_repro.experiments import SelectionCallback, inference_copy
from delta_repro.evaluation import generate_completions
from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer


@pytest.fixture(scope="module")
def policy():
    tok = train_bpe_tokenizer(["1 + 2 = 3", "4 - 1 = 3", "so \\\\boxed{3}"] * 20, vocab_size=300)
    return tiny_causal_lm(tok, "qwen3", hidden_size=32, num_layers=2, num_heads=2), tok


def test_no_dtype_or_the_same_dtype_is_the_policy_itself(policy):
    model, _ = policy
    assert inference_copy(model, None) is model
    assert inference_copy(model, "float32") is model


def test_a_bf16_copy_leaves_the_master_weights_untouched(policy):
    model, _ = policy
    before = {n: p.detach().clone() for n, p in model.state_dict().items()}
    copy = inference_copy(model, "bfloat16")
    assert copy is not model and copy.dtype == torch.bfloat16 and not copy.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    for n, p in model.state_dict().items():
        assert torch.equal(p, before[n]), n
        # the copy holds the same weights, rounded to bf16
        assert torch.equal(copy.state_dict()[n], before[n].to(torch.bfloat16)), n
    with torch.no_grad():  # and it is a working policy: its logits follow the float32 ones closely
        ids = torch.randint(3, 200, (2, 7))
        a, b = model(ids).logits, copy(ids).logits.float()
    assert torch.isfinite(b).all() and (a - b).abs().max() < 0.05 * a.abs().max() + 0.05


def test_sampling_from_the_copy_gives_text_for_every_prompt(policy):
    model, tok = policy
    out = generate_completions(inference_copy(model, "bfloat16"), tok, ["1 + 2 =", "4 - 1 ="], k=2, max_new_tokens=5,
                               progress=False)
    assert [len(o) for o in out] == [2, 2] and all(isinstance(c, str) for o in out for c in o)


@pytest.mark.parametrize("bad", ["bf16", "int8", torch.bfloat16, 16])
def test_a_bad_dtype_is_refused_naming_it(policy, bad, tmp_path):
    model, tok = policy
    with pytest.raises(ValueError, match="dtype"):
        inference_copy(model, bad)
    with pytest.raises(ValueError, match="dtype"):
        SelectionCallback(tok, None, tmp_path / "best", every=1, k=1, max_new_tokens=4, seed=0, dtype=bad)


def test_a_copy_of_a_policy_inside_a_training_run_samples_through_its_own_forward(policy):
    # a policy inside a training run: gradient checkpointing on (TRL's default), train mode, and accelerate's
    # autocast wrapper as an instance `forward` that calls the original module. A deep copy kept that wrapper and
    # sampled through the original's forward, which drops the KV cache in train mode: nonsense text (issue 37).
    import types
    model, tok = policy
    clean = inference_copy(model, "bfloat16")
    calls = []
    wrapped = model.forward
    def autocast_forward(*a, **kw):
        calls.append(1)
        return wrapped(*a, **kw)
    model.gradient_checkpointing_enable()
    model.train()
    model.forward = autocast_forward
    try:
        copy = inference_copy(model, "bfloat16")
        assert "forward" not in copy.__dict__ and not copy.training and copy.config.use_cache
        enc = tok(["1 + 2 =", "4 - 1 ="], return_tensors="pt", padding=True)
        with torch.no_grad():
            got = copy.generate(**enc, do_sample=False, max_new_tokens=6, pad_token_id=tok.pad_token_id)
            want = clean.generate(**enc, do_sample=False, max_new_tokens=6, pad_token_id=tok.pad_token_id)
        assert torch.equal(got, want) and not calls  # the original's forward was never called
    finally:
        del model.forward
        model.gradient_checkpointing_disable()
        model.eval()
