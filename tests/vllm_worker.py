"""Run by tests/test_vllm.py with the python of the optional vLLM environment (.venv-vllm, made by
scripts/vllm_env.sh): DelTA trains with TRL's colocated vLLM rollouts (`use_vllm=True, vllm_mode="colocate"`) on a
tiny Qwen3 on CPU, in one process. Writes a JSON report to argv[1]; the test reads it.

Everything CPU-specific is in `cpu_only_vllm_test_device` below; the library and TRL are used as on a GPU."""
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache: plenty for 64-token sequences
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # share the cores with whatever else runs
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
OUT = Path(sys.argv[1])


def cpu_only_vllm_test_device():
    """CPU-ONLY TEST DEVICE, never used by the library: two changes to TRL 1.16's colocate mode on vLLM's CPU build.

    1. float32 in vLLM. TRL builds `vllm.LLM` without a dtype; vLLM's CPU platform then runs a float32 checkpoint in
       bfloat16, and its log-probs differ from the trainer's float32 ones by ~2e-3, too much for an equality test.
    2. Weight sync. TRL pushes each parameter with `model.load_weights([(name, param)])`. On CPU vLLM repacks the
       linear layers' weights once loaded (their parameters lose `weight_loader`), so that call fails with
       "'Parameter' object has no attribute 'weight_loader'". Here all of the trainer's current weights (TRL's own
       `_iter_named_params`) are reloaded at once through vLLM's model runner (`reload_weights`), which runs the
       repacking again. On GPUs TRL's own `sync_weights` is used and nothing here is involved."""
    import trl.generation.vllm_generation as vg

    llm_class = vg.LLM
    vg.LLM = lambda *args, **kwargs: llm_class(*args, **{**kwargs, "dtype": "float32"})

    def sync_weights(self):
        runner = self.llm.llm_engine.model_executor.driver_worker.model_runner
        runner.reload_weights(weights_iterator=self._iter_named_params())
        self.llm.reset_prefix_cache()

    vg.VLLMGeneration.sync_weights = sync_weights


cpu_only_vllm_test_device()

from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.inputs import TokensPrompt  # noqa: E402

from conftest import BASE, PAIRS, prefix_reward  # noqa: E402
from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer  # noqa: E402
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer  # noqa: E402


class RecordingTrainer(DeltaGRPOTrainer):
    "Keeps, per generation batch, the log-probs DelTA's proxies were built from and what TRL returned beside them."
    batches = []

    def _proxies(self, hidden, logps, completion_ids):
        self._proxy_logps = logps.detach().clone()
        return super()._proxies(hidden, logps, completion_ids)

    def _generate_and_score_completions(self, inputs):
        self._proxy_logps = None
        out = super()._generate_and_score_completions(inputs)
        mask = out["completion_mask"].bool()
        rec = dict(step=self.state.global_step, proxy_logps=self._proxy_logps, mask=mask,
                   old=out.get("old_per_token_logps"), vllm=out.get("sampling_per_token_logps"),
                   is_ratio=out.get("importance_sampling_ratio"))
        self.batches.append({k: (v.detach().clone() if torch.is_tensor(v) else v) for k, v in rec.items()})
        return out


def vllm_logprobs(llm, ids):
    "vLLM's log-probs of tokens 1.. of `ids` given their prefixes (prompt log-probs, temperature 1)."
    out = llm.generate([TokensPrompt(prompt_token_ids=ids)], SamplingParams(max_tokens=1, temperature=1.0,
                                                                             prompt_logprobs=0), use_tqdm=False)
    return torch.tensor([d[t].logprob for d, t in zip(out[0].prompt_logprobs[1:], ids[1:])], dtype=torch.float64)


def trainer_logprobs(model, ids):
    "The trainer's own log-probs of the same tokens, in eval mode, float32."
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].float()
    model.train(was_training)
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].double()


tok = train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)
ds = Dataset.from_list([{"prompt": f"{a} + {b} =", "answer": str(a + b)} for a, b in PAIRS])
with tempfile.TemporaryDirectory() as d:
    # head_dim 32: vLLM's CPU attention refuses 16; vLLM loads the policy from disk, as from the hub
    tiny_causal_lm(tok, "qwen3", hidden_size=64, num_heads=2).save_pretrained(d)
    tok.save_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32)
    args = DeltaGRPOConfig(output_dir=str(OUT.parent / "vllm-trainer"), credit_assignment="delta",
                           use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.1,
                           vllm_max_model_length=64, **{**BASE, "max_steps": 4})
    tr = RecordingTrainer(model=model, reward_funcs=prefix_reward, args=args, train_dataset=ds, processing_class=tok)
    llm = tr.vllm_generation.llm
    fixed = tok("7 + 8 = 15")["input_ids"] + [tok.eos_token_id]  # a fixed completion of a fixed prompt
    before = vllm_logprobs(llm, fixed)
    report = dict(before_vs_trainer=float((before - trainer_logprobs(tr.model, fixed)).abs().max()))
    tr.train()
    tr.vllm_generation.sync_weights()  # what TRL does before its next generation
    after_vllm, after_trainer = vllm_logprobs(llm, fixed), trainer_logprobs(tr.model, fixed)
    # A probe (not a workaround): one more generation batch in which vLLM reports every log-prob 0.25 too low. The
    # proxies must not move: DelTA builds them from the trainer's own log-probs, never from the sampler's.
    generate = tr.vllm_generation.generate

    def biased(*a, **kw):
        prompt_ids, completion_ids, logprobs, token_ids = generate(*a, **kw)
        logprobs = [[[None if x is None else x - 0.25 for x in tokens] for tokens in seq] for seq in logprobs]
        return prompt_ids, completion_ids, logprobs, token_ids

    tr.vllm_generation.generate = biased
    tr.model.train()
    tr._generate_and_score_completions([ds[i] for i in range(4) for _ in range(args.num_generations)])

report.update(
    steps=tr.state.global_step, vllm_dtype=str(llm.llm_engine.model_config.dtype),
    is_correction=bool(tr.vllm_importance_sampling_correction), is_mode=tr.vllm_importance_sampling_mode,
    after_vllm_vs_trainer=float((after_vllm - after_trainer).abs().max()),
    moved=float((after_vllm - before).abs().max()),
    losses=[l["loss"] for l in tr.state.log_history if "loss" in l],
    lam_mean=[l["delta/lam_mean"] for l in tr.state.log_history if "delta/lam_mean" in l],
    is_ratio_mean=[l["sampling/importance_sampling_ratio/mean"] for l in tr.state.log_history
                   if "sampling/importance_sampling_ratio/mean" in l],
    batches=[])
for b in RecordingTrainer.batches:
    m = b["mask"]
    report["batches"].append(dict(
        step=b["step"], has_is_ratio=b["is_ratio"] is not None, has_vllm_logps=b["vllm"] is not None,
        proxies_use_trainer_logps=bool(torch.equal(b["proxy_logps"][m], b["old"][m])),
        proxies_minus_vllm_max=float((b["proxy_logps"][m] - b["vllm"][m]).abs().max()),
        proxies_minus_vllm_min=float((b["proxy_logps"][m] - b["vllm"][m]).abs().min()),
        # token-level modes give (B, T) ratios, sequence-level ones (B, 1)
        is_ratio_shape=list(b["is_ratio"].shape),
        is_ratio_minus_1_max=float((b["is_ratio"][m if b["is_ratio"].shape == m.shape else m.any(1)] - 1).abs().max())))
OUT.write_text(json.dumps(report, indent=1))
