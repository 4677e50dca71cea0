"""Token-gradient proxies: equal to autograd's LM-head gradient on tiny real architectures; hook hygiene; errors."""
import pytest
import torch
from transformers import (LlamaConfig, LlamaForCausalLM, Olmo3Config, Olmo3ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM, Qwen3Model)

from delta_repro.proxies import capture_lm_head_inputs, lm_head_proxy, output_embedding, topk_hidden_proxy

SMALL = dict(vocab_size=61, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, head_dim=8, tie_word_embeddings=False)


def tiny(arch):
    torch.manual_seed(0)
    if arch == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(**SMALL)).eval()
    if arch == "llama":
        return LlamaForCausalLM(LlamaConfig(**SMALL)).eval()
    return Olmo3ForCausalLM(Olmo3Config(**SMALL)).eval()


@pytest.mark.parametrize("arch", ["qwen3", "llama", "olmo3"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_proxy_is_the_lm_head_gradient(arch, temperature):
    model = tiny(arch)
    ids = torch.randint(0, SMALL["vocab_size"], (2, 7), generator=torch.Generator().manual_seed(1))
    with capture_lm_head_inputs(model) as hidden:
        logits = model(ids).logits
    assert len(hidden) == 1 and hidden[0].shape == (2, 7, SMALL["hidden_size"]) and not hidden[0].requires_grad
    logp = (logits[:, :-1].float() / temperature).log_softmax(-1).gather(-1, ids[:, 1:, None])[..., 0]
    v = lm_head_proxy(hidden[0][:, :-1], logp.detach())
    W = model.get_output_embeddings().weight
    for b, t in [(0, 0), (1, 3), (0, 5)]:
        (g,) = torch.autograd.grad(logp[b, t], W, retain_graph=True)
        y = ids[b, t + 1]
        # d log softmax(W h / tau)_y / d W_y = (1 - p_y) h / tau: the proxy up to the global 1/tau
        torch.testing.assert_close(g[y] * temperature, v[b, t], atol=1e-6, rtol=1e-5)


def test_capture_sees_logits_to_keep_slice_and_each_chunk():
    model = tiny("qwen3")
    ids = torch.randint(0, SMALL["vocab_size"], (3, 9))
    with capture_lm_head_inputs(model) as hidden:
        full = model(ids).logits
        for chunk in ids.split(2):
            model(chunk, logits_to_keep=4)
    assert [h.shape[:2] for h in hidden] == [(3, 9), (2, 4), (1, 4)]
    torch.testing.assert_close(hidden[1], hidden[0][:2, -4:], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(hidden[0] @ model.lm_head.weight.T, full, atol=1e-5, rtol=1e-5)


def test_capture_transform_and_hook_removed_even_on_error():
    model = tiny("llama")
    head = output_embedding(model)
    with pytest.raises(RuntimeError):
        with capture_lm_head_inputs(model, transform=lambda h: h.to(torch.bfloat16)) as hidden:
            model(torch.randint(0, 61, (1, 4)))
            raise RuntimeError("boom")
    assert hidden[0].dtype == torch.bfloat16
    assert len(head._forward_pre_hooks) == 0


def test_capture_unwraps_module_wrappers():
    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.module = m

    model = tiny("qwen3")
    assert output_embedding(Wrapper(model)) is model.lm_head


def test_model_without_lm_head_is_rejected():
    with pytest.raises(ValueError, match="model"):
        with capture_lm_head_inputs(Qwen3Model(Qwen3Config(**SMALL))):
            pass
    with pytest.raises(ValueError, match="model"):
        output_embedding(torch.nn.Linear(3, 3))


def test_proxy_hand_values_dtype_and_confident_tokens():
    h = torch.tensor([[[2.0, -4.0], [1.0, 1.0], [3.0, 3.0]]], dtype=torch.bfloat16)
    lp = torch.tensor([[torch.log(torch.tensor(0.75)).item(), 0.0, -1e-9]])
    v = lm_head_proxy(h, lp)
    assert v.dtype == torch.bfloat16
    torch.testing.assert_close(v.float(), torch.tensor([[[0.5, -1.0], [0.0, 0.0], [3e-9, 3e-9]]]), atol=1e-3, rtol=0)
    # expm1 keeps the tiny 1 - p of a confident token instead of rounding it to 0
    assert lm_head_proxy(torch.ones(1, 1, 1, dtype=torch.float64), torch.tensor([[-1e-12]]))[0, 0, 0] > 0


@pytest.mark.parametrize("args, name", [
    ((torch.randn(2, 3), torch.zeros(2, 3)), "hidden"),
    ((torch.randint(0, 2, (1, 2, 3)), torch.zeros(1, 2)), "hidden"),
    ((torch.randn(1, 2, 3), torch.zeros(1, 3)), "token_logprobs"),
    ((torch.randn(1, 2, 3), torch.full((1, 2), 0.5)), "token_logprobs"),
])
def test_proxy_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        lm_head_proxy(*args)


def test_topk_proxy_exact_at_full_vocab_and_approximates_at_small_k():
    torch.manual_seed(0)
    W = torch.randn(40, 8)
    h = torch.randn(2, 5, 8, requires_grad=True)
    y = torch.randint(0, 40, (2, 5))
    logits = 3 * h @ W.T  # peaked distributions: top-k captures most of the mass
    logp = logits.log_softmax(-1).gather(-1, y[..., None]).sum()
    (g,) = torch.autograd.grad(logp, h)
    exact = topk_hidden_proxy(logits, y, W, k=40, chunk_size=3)
    torch.testing.assert_close(exact, g / 3, atol=1e-5, rtol=1e-5)
    approx = topk_hidden_proxy(logits, y, W, k=8)
    cos = torch.nn.functional.cosine_similarity(approx, exact, dim=-1)
    assert cos.mean() > 0.9
    # temperature: probabilities are softmax(logits / tau)
    torch.testing.assert_close(topk_hidden_proxy(logits, y, W, k=40, temperature=2.0),
                               topk_hidden_proxy(logits / 2, y, W, k=40), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kw, name", [
    (dict(logits=torch.randn(2, 3)), "logits"), (dict(tokens=torch.zeros(2, 3)), "tokens"),
    (dict(tokens=torch.zeros(2, 4, dtype=torch.long)), "tokens"), (dict(lm_head_weight=torch.randn(9, 4)), "lm_head_weight"),
    (dict(k=0), "k"), (dict(k=11), "k"), (dict(temperature=0.0), "temperature")])
def test_topk_bad_input(kw, name):
    args = dict(logits=torch.randn(2, 3, 10), tokens=torch.zeros(2, 3, dtype=torch.long), lm_head_weight=torch.randn(10, 4), k=2)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        topk_hidden_proxy(**args)


@pytest.mark.parametrize("kw, match", [(dict(chunk_size=-1), "chunk_size"), (dict(chunk_size=0), "chunk_size"),
                                       (dict(temperature=float("inf")), "temperature"), (dict(k=True), "k must")])
def test_topk_hidden_proxy_rejects_bad_arguments(kw, match):
    from delta_repro.proxies import topk_hidden_proxy
    args = dict(k=2) | kw
    with pytest.raises(ValueError, match=match):
        topk_hidden_proxy(torch.randn(1, 2, 5), torch.zeros(1, 2, dtype=torch.long), torch.randn(5, 3), **args)


@pytest.mark.parametrize("bad", [-1, -100, 5])
def test_topk_hidden_proxy_rejects_out_of_vocabulary_tokens(bad):
    from delta_repro.proxies import topk_hidden_proxy
    with pytest.raises(ValueError, match="tokens"):
        topk_hidden_proxy(torch.randn(1, 2, 5), torch.tensor([[0, bad]]), torch.randn(5, 3), k=2)


def test_topk_proxy_edge_cases_zero_length_and_tiny_temperature():
    # found by an attack: zero-length completions raised a bare reshape error, τ = 1e-40 gave NaN
    g = torch.Generator().manual_seed(0)
    W = torch.randn(7, 5, generator=g)
    out = topk_hidden_proxy(torch.randn(2, 0, 7), torch.zeros(2, 0, dtype=torch.long), W, k=3)
    assert out.shape == (2, 0, 5) and out.dtype == torch.float32
    logits, tokens = torch.randn(2, 3, 7, generator=g), torch.randint(0, 7, (2, 3), generator=g)
    for tau in (1e-38, 1e-40, 1e-300):
        v = topk_hidden_proxy(logits, tokens, W, k=3, temperature=tau)
        # as τ → 0 the top-k distribution is one-hot on the argmax: v = W_y − W_argmax
        torch.testing.assert_close(v, W[tokens] - W[logits.argmax(-1)])
    torch.testing.assert_close(topk_hidden_proxy(logits, tokens, W, k=7, temperature=0.7),
                               W[tokens] - torch.softmax(logits / 0.7, -1) @ W)  # k = V: the exact expectation
