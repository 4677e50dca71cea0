"""Run under `accelerate launch` with two CPU processes (gloo) by tests/test_engines.py:

    accelerate launch --config_file CONFIG tests/engine_worker.py ENGINE INIT_DIR OUT_DIR

ENGINE is `ddp` (the reference), `fsdp` (FSDP2 full sharding) or `deepspeed` (ZeRO-3). Trains DelTA with
`delta_statistics="global"` for 2 steps on a tiny Qwen3 model and writes, per rank, `OUT_DIR/rank{r}.pt`:
the captured final hidden states (B, T, d) and DelTA's coefficients of the first generation batch, the logged losses,
how the parameters are laid out (sharded or not), and, from rank 0, the full parameters after optimizer step 1.
Everything engine-specific the test needs is in this file; the library is used as a user would use it."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
ENGINE, INIT, OUT = sys.argv[1], sys.argv[2], Path(sys.argv[3])


def cpu_only_fsdp_test_device():
    """CPU-ONLY TEST DEVICE, never used by the library: lets accelerate run FSDP2 over gloo on CPU processes.

    accelerate 1.15 switches to FSDP only for GPU-like distributed types (MULTI_GPU, MULTI_NPU, ...): on CPU
    processes it keeps MULTI_CPU and silently runs plain DDP, although torch's `fully_shard` itself works on CPU over
    gloo. This wrapper lets `AcceleratorState` initialise as usual and then, when an FSDP plugin was requested (by
    the accelerate config), records FSDP as the distributed type on both `AcceleratorState` and `PartialState`, so
    that accelerate's own FSDP2 path (`fsdp2_prepare_model`, sharded optimizer, full state dict) is the one under
    test. On GPUs accelerate takes this path by itself and nothing here is involved."""
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    original = AcceleratorState.__init__

    def init(self, *args, fsdp_plugin=None, **kwargs):
        original(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = fsdp_plugin
            PartialState._shared_state["distributed_type"] = DistributedType.FSDP

    AcceleratorState.__init__ = init


if ENGINE == "fsdp":
    cpu_only_fsdp_test_device()

from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback  # noqa: E402

from conftest import BASE, PAIRS, prefix_reward  # noqa: E402
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer  # noqa: E402


class RecordingTrainer(DeltaGRPOTrainer):
    "DeltaGRPOTrainer that keeps what the test compares: hidden states it captured and the coefficients it computed."
    record = {}

    def _proxies(self, hidden, logps, completion_ids):
        self.record.setdefault("hidden", hidden.detach().float().clone())
        return super()._proxies(hidden, logps, completion_ids)

    def _log_coefficients(self, coefs, weights, mask, entropies, seconds):
        if "weights" not in self.record:
            self.record.update(weights=weights.detach().clone(), lam=coefs.lam.detach().clone(), mask=mask.detach().clone(),
                               gamma=coefs.gamma.detach().clone(), centroids=coefs.centroids.detach().float().clone())
        return super()._log_coefficients(coefs, weights, mask, entropies, seconds)


def layout(model):
    "How the parameters are stored on this process: (local elements, full elements, kind of storage)."
    local = full = 0
    kinds = set()
    for p in model.parameters():
        if hasattr(p, "ds_numel"):  # DeepSpeed ZeRO-3: p.data is empty, p.ds_tensor holds this rank's partition
            local, full = local + p.ds_tensor.numel(), full + p.ds_numel
            kinds.add("zero3-partitioned" if p.ds_tensor.numel() < p.ds_numel else "zero3-whole")
        elif type(p).__name__ == "DTensor" or type(p.data).__name__ == "DTensor":
            local, full = local + p.to_local().numel(), full + p.numel()
            kinds.add("dtensor")
        else:
            local, full = local + p.numel(), full + p.numel()
            kinds.add("plain")
    return dict(local=local, full=full, kinds=sorted(kinds))


class AfterStepOne(TrainerCallback):
    "The full parameters after optimizer step 1 (accelerate's `get_state_dict`, a collective on every engine)."
    def __init__(self, trainer):
        self.trainer = trainer

    def on_step_end(self, args, state, control, **kw):
        if state.global_step != 1: return
        tr = self.trainer
        wrapped = tr.model_wrapped if tr.is_deepspeed_enabled else tr.model
        sd = tr.accelerator.get_state_dict(wrapped)
        RecordingTrainer.record["layout"] = layout(tr.model)
        if tr.accelerator.is_main_process:
            RecordingTrainer.record["params"] = {k: v.detach().float().cpu().clone() for k, v in sd.items()}


ds = Dataset.from_list([{"prompt": f"{a} + {b} =", "answer": str(a + b)} for a, b in PAIRS])
# BASE has use_cpu=True; DeepSpeed needs it on CPU (with use_cpu=False accelerate and DeepSpeed disagree on the world
# size and the batch check fails)
args = DeltaGRPOConfig(output_dir=str(OUT / "trainer"), credit_assignment="delta", delta_statistics="global",
                       **{**BASE, "per_device_train_batch_size": 4})
# the policy is loaded after the config exists, as at scale: under ZeRO-3 `from_pretrained` then builds it partitioned
# (deepspeed.zero.Init) and loads the weights into the partitions
tok = AutoTokenizer.from_pretrained(INIT)
model = AutoModelForCausalLM.from_pretrained(INIT, dtype=torch.float32)
tr = RecordingTrainer(model=model, reward_funcs=prefix_reward, args=args, train_dataset=ds, processing_class=tok)
tr.add_callback(AfterStepOne(tr))
tr.train()
rec = RecordingTrainer.record
rec.update(engine=ENGINE, distributed_type=str(tr.accelerator.distributed_type), world=tr.accelerator.num_processes,
           losses=[l["loss"] for l in tr.state.log_history if "loss" in l],
           lam_mean=[l["delta/lam_mean"] for l in tr.state.log_history if "delta/lam_mean" in l])
OUT.mkdir(parents=True, exist_ok=True)
torch.save(rec, OUT / f"rank{tr.accelerator.process_index}.pt")
# tear the process group down while the interpreter is whole (as tests/multiprocess_worker.py does): left to exit,
# gloo's worker threads were destroyed during finalization and rank 0 aborted after writing its file ("terminate
# called without an active exception", SIGABRT; CI of 2026-12-07, the FSDP launch). A barrier first, so that neither
# rank destroys the group while the other still uses it.
tr.accelerator.wait_for_everyone()
tr.accelerator.end_training()  # trackers finished, then torch.distributed.destroy_process_group()
