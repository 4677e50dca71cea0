"""What DeltaGRPOTrainer relies on in TRL. If a TRL upgrade breaks one of these, this file says which seam moved
(see the trainer notebook, "Where DelTA enters TRL") before any silent change in the loss can happen."""
import dataclasses
import inspect

import torch
import trl
from trl import GRPOTrainer

from delta_repro.proxies import capture_final_hidden_states, capture_lm_head_inputs
from test_trainer import generation_batch


def _src(name):
    return inspect.getsource(getattr(GRPOTrainer, name))


def test_trl_version_is_the_pinned_one():
    assert trl.__version__ == "1.16.0", f"TRL {trl.__version__}: re-check every seam below, then update the pin"


def test_overridden_methods_keep_their_signatures():
    sig = inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies)
    assert list(sig.parameters)[:7] == ["self", "model", "input_ids", "attention_mask", "logits_to_keep",
                                        "batch_size", "compute_entropy"]
    assert list(inspect.signature(GRPOTrainer._generate_and_score_completions).parameters) == ["self", "inputs"]
    assert list(inspect.signature(GRPOTrainer._compute_loss).parameters) == ["self", "model", "inputs"]
    assert list(inspect.signature(GRPOTrainer._calculate_rewards).parameters) == [
        "self", "inputs", "prompts", "completions", "completion_ids_list"]


def test_prompts_pass_through_one_seam_that_can_cut_them():
    # DeltaGRPOTrainer._tokenize_prompts enforces max_prompt_length, which TRL 1.16's GRPOConfig does not have
    assert list(inspect.signature(GRPOTrainer._tokenize_prompts).parameters) == ["self", "prompts"]
    assert "prompt_ids, images, multimodal_fields = self._tokenize_prompts(prompts)" in _src("_generate")
    assert "max_prompt_length" not in {f.name for f in dataclasses.fields(trl.GRPOConfig)}


def test_old_logps_pass_comes_first_and_rewards_are_computed_inside_generation():
    src = _src("_generate_and_score_completions")
    old = src.index("old_per_token_logps, _, _ = self._get_per_token_logps_and_entropies(")
    ref = src.index("ref_per_token_logps, _, _ = self._get_per_token_logps_and_entropies(")
    assert old < ref  # our capture takes the first call of a generation: it must be the policy's old-logp pass
    assert "self._calculate_rewards(" in src
    assert "advantages = advantages[process_slice]" in src  # local slice of the globally gathered rewards
    assert "num_items_in_batch = self.accelerator.gather(loss_mask.sum()).sum()" in src


def test_compute_loss_reads_advantages_after_the_logps_and_accepts_per_token_advantages():
    src = _src("_compute_loss")
    assert src.index("self._get_per_token_logps_and_entropies(") < src.index('advantages = inputs["advantages"]')
    assert "if advantages.dim() == 1:" in src  # (B, T) advantages are used as they are
    assert "per_token_loss = -torch.min(per_token_loss1, per_token_loss2)" in src


def test_generation_batch_is_split_after_generate_and_score():
    src = _src("_prepare_inputs")
    assert src.index("self._generate_and_score_completions(") < src.index("split_tensor_dict(")


def test_fused_lm_head_bypasses_the_head_module_but_not_the_backbone(make_trainer):
    """Why the trainer hooks the backbone: TRL 1.16 computes log-probs with a fused head that never calls
    `lm_head.forward`, so a pre-hook on the output embedding sees nothing."""
    tr = make_trainer(credit_assignment="none")
    _, out = generation_batch(tr)
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    attn = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    T = out["completion_ids"].shape[1]
    with torch.no_grad(), capture_lm_head_inputs(tr.model) as at_head, capture_final_hidden_states(tr.model) as at_base:
        tr._get_per_token_logps_and_entropies(tr.model, ids, attn, T)
    assert at_head == [] and len(at_base) == 1 and at_base[0].shape[:2] == ids.shape


def test_generation_output_keys():
    src = _src("_generate_and_score_completions")
    for key in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "num_items_in_batch"):
        assert f'"{key}": {key}' in src, key
    assert 'output["old_per_token_logps"] = old_per_token_logps' in src
