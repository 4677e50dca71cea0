"""Run under `accelerate launch --multi_gpu --num_processes 2` on a CPU machine by tests/test_multiprocess.py (gloo on CPU).

Checks on real collectives that global DelTA statistics make the coefficients independent of the number of
processes, then trains DelTA for 2 steps on two processes. Rank 0 writes a JSON report to argv[1]."""
import json
import sys
from pathlib import Path

import torch
from accelerate import Accelerator

sys.path.insert(0, str(Path(__file__).parent))
from conftest import BASE, PAIRS, prefix_reward  # noqa: E402

from delta_repro.coefficients import StreamingDeltaEstimator, delta_coefficients  # noqa: E402
from delta_repro.losses import token_selection_weights  # noqa: E402

acc = Accelerator(cpu=True)
rank, world = acc.process_index, acc.num_processes
report = {"world": world}

g = torch.Generator().manual_seed(0)
B, T, d = 8, 12, 16
P = torch.randn(B, T, d, generator=g) + 1.0
A = torch.randn(B, generator=g)
A[1] = 0.0
M = (torch.arange(T)[None] < torch.randint(2, T + 1, (B,), generator=g)[:, None]).float()
whole = delta_coefficients(P, A, M)
rows = slice(rank * B // world, (rank + 1) * B // world)
reduce = lambda t: acc.reduce(t, reduction="sum")
local = delta_coefficients(P[rows], A[rows], M[rows], all_reduce=reduce)
got = acc.gather(local.weights)
report["max_abs_diff_global"] = float((got - whole.weights).abs().max())
est = StreamingDeltaEstimator(all_reduce=reduce, variance="gram")
while not est.done:
    est.update(P[rows], A[rows], M[rows])
    est.end_pass()
report["max_abs_diff_streaming_gram"] = float((acc.gather(est.result()[0].weights) - whole.weights).abs().max())
report["max_abs_diff_local_mode"] = float((acc.gather(delta_coefficients(P[rows], A[rows], M[rows]).weights)
                                          - whole.weights).abs().max())


def gather(x):
    pad = acc.pad_across_processes(x, dim=0, pad_index=float("nan"))
    allv = acc.gather(pad)
    return allv[~torch.isnan(allv)]


sel = token_selection_weights(whole.lam[rows], M[rows], "top", 0.5, torch.Generator().manual_seed(rank), gather=gather)
report["selected_fraction"] = float(acc.reduce((sel > 0).sum().float(), "sum") / M.sum())

# a real two-process DelTA training run through TRL
from datasets import Dataset  # noqa: E402

from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer  # noqa: E402
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer  # noqa: E402

tok = train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)
ds = Dataset.from_list([{"prompt": f"{a} + {b} =", "answer": str(a + b)} for a, b in PAIRS])
args = DeltaGRPOConfig(output_dir=sys.argv[1] + ".out", credit_assignment="delta",
                       **{**BASE, "per_device_train_batch_size": 4})
tr = DeltaGRPOTrainer(model=tiny_causal_lm(tok, "qwen3", hidden_size=32), reward_funcs=prefix_reward, args=args,
                      train_dataset=ds, processing_class=tok)
tr.train()
report["losses"] = [l["loss"] for l in tr.state.log_history if "loss" in l]
report["lam_mean"] = [l["delta/lam_mean"] for l in tr.state.log_history if "delta/lam_mean" in l]
if rank == 0:
    Path(sys.argv[1]).write_text(json.dumps(report))
# tear the process group down while the interpreter is whole: left to exit, gloo's worker threads were destroyed
# during finalization and a rank aborted ("terminate called without an active exception", SIGABRT; pytorch
# issue 190489). A barrier first, so that neither rank destroys the group while the other still uses it.
acc.wait_for_everyone()
acc.end_training()  # accelerate: trackers finished, then torch.distributed.destroy_process_group()
