"""The scale-out engines on CPU: DelTA trained by two processes under FSDP2 and under DeepSpeed ZeRO-3 equals the
plain data-parallel (DDP) run, and the shipped accelerate configs agree with the paper's settings.

Each engine run is `accelerate launch` of tests/engine_worker.py with two CPU processes over gloo, from the shipped
config in configs/accelerate/ changed only where a CPU test must (2 processes, float32, see `_engine_config`). All runs
start from the same saved tiny Qwen3 and sample with the same seeds, so the rollouts, and therefore DelTA's
coefficients, must be the same; what differs is how parameters, gradients and optimizer states are split.

Tolerances. FSDP2 over two processes reduces each gradient with the same two-term sums as DDP: everything is compared
at 1e-6 (measured: exactly equal). ZeRO-3 keeps its own flat fp32 partitions and clips the gradient norm with its own
reduction: coefficients and the first loss at 1e-6 (measured: exactly equal), parameters after one AdamW step at
1e-5 absolute (measured: 3e-7; one step moves a parameter by up to lr = 1e-3)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
ACC = ROOT / "configs" / "accelerate"
WORKER = Path(__file__).parent / "engine_worker.py"


@pytest.fixture(scope="module")
def init_dir(tmp_path_factory):
    "The saved starting policy every engine loads (tokenizer + tiny Qwen3, float32)."
    from conftest import PAIRS
    from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
    d = tmp_path_factory.mktemp("init")
    tok = train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)
    tiny_causal_lm(tok, "qwen3", hidden_size=32).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def _engine_config(engine: str, tmp: Path) -> Path:
    """An accelerate config for two CPU processes. `fsdp` and `deepspeed` are the shipped 1x8 configs with only the
    process count and precision changed (bf16 autocast is off in the tests, as everywhere on CPU); `ddp` is plain data
    parallelism through the same torchrun launcher."""
    if engine == "ddp":
        cfg = dict(compute_environment="LOCAL_MACHINE", distributed_type="MULTI_GPU", num_machines=1, machine_rank=0,
                   rdzv_backend="static", same_network=True, main_training_function="main", use_cpu=False)
    elif engine == "fsdp":
        cfg = yaml.safe_load((ACC / "fsdp_1x8.yaml").read_text())
    else:
        cfg = yaml.safe_load((ACC / "deepspeed_zero3_1x8.yaml").read_text())
        shipped = cfg.pop("deepspeed_config")
        # The shipped fields, written as the DeepSpeed JSON they stand for ("auto": filled in by transformers from the
        # trainer's arguments), plus one test-only setting: parameters smaller than the persistence threshold (default
        # 1e5 elements) stay whole on every rank, which is every parameter of a tiny model; 0 partitions them all.
        ds = {"zero_optimization": {"stage": shipped["zero_stage"], "stage3_param_persistence_threshold": 0,
                                    "stage3_gather_16bit_weights_on_model_save": shipped["zero3_save_16bit_model"],
                                    "offload_optimizer": {"device": shipped["offload_optimizer_device"]},
                                    "offload_param": {"device": shipped["offload_param_device"]}},
              "gradient_clipping": "auto", "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
              "gradient_accumulation_steps": "auto", "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}}
        (tmp / "ds.json").write_text(json.dumps(ds))
        cfg["deepspeed_config"] = {"deepspeed_config_file": str(tmp / "ds.json"), "zero3_init_flag": shipped["zero3_init_flag"]}
        cfg.pop("mixed_precision")  # with a DeepSpeed JSON, precision lives there ("auto": the trainer's bf16=False)
    cfg["num_processes"] = 2
    if engine != "deepspeed": cfg["mixed_precision"] = "no"
    path = tmp / f"{engine}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _launch(engine, init_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(engine)
    out = tmp / "out"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(_engine_config(engine, tmp)),
           "--main_process_port", str(free_port()), str(WORKER), engine, str(init_dir), str(out)]
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", DS_ACCELERATOR="cpu")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


@pytest.fixture(scope="module")
def ddp(init_dir, tmp_path_factory):
    return _launch("ddp", init_dir, tmp_path_factory)


@pytest.fixture(scope="module")
def fsdp(init_dir, tmp_path_factory):
    return _launch("fsdp", init_dir, tmp_path_factory)


@pytest.fixture(scope="module")
def zero3(init_dir, tmp_path_factory):
    pytest.importorskip("deepspeed", reason="deepspeed is pinned in requirements.txt; this environment lacks it")
    return _launch("deepspeed", init_dir, tmp_path_factory)


def _max_diff(a, b):
    return float((a.float() - b.float()).abs().max())


def _check_same_training(ref, other, params_atol):
    for r in (0, 1):  # rank r sampled the same prompts and completions in both runs
        assert other[r]["world"] == ref[r]["world"] == 2
        assert ref[r]["hidden"].shape == other[r]["hidden"].shape and ref[r]["hidden"].shape[-1] == 32  # full d
        assert _max_diff(ref[r]["hidden"], other[r]["hidden"]) <= 1e-6  # the backbone hook fired on the sharded model
        for key in ("lam", "weights", "gamma", "centroids"):  # global statistics: the same coefficients on every rank
            assert _max_diff(ref[r][key], other[r][key]) <= 1e-6, key
        assert torch.equal(ref[r]["mask"], other[r]["mask"])
        assert other[r]["losses"][0] == pytest.approx(ref[r]["losses"][0], abs=1e-6)
        assert len(other[r]["losses"]) == 2 and all(map(torch.isfinite, torch.tensor(other[r]["losses"])))
    p_ref, p = ref[0]["params"], other[0]["params"]
    assert p.keys() == p_ref.keys()
    diffs = {k: _max_diff(p_ref[k], p[k]) for k in p}
    assert max(diffs.values()) <= params_atol, sorted(diffs.items(), key=lambda kv: -kv[1])[:3]


def test_ddp_reference_trains_and_moves_the_parameters(ddp, init_dir):
    from transformers import AutoModelForCausalLM
    assert [r["distributed_type"] for r in ddp] == ["DistributedType.MULTI_CPU"] * 2
    assert ddp[0]["layout"]["kinds"] == ["plain"]
    init = AutoModelForCausalLM.from_pretrained(init_dir).state_dict()
    moved = max(_max_diff(init[k], v) for k, v in ddp[0]["params"].items())
    assert moved > 1e-4  # the step-1 parameters compared below are not the starting ones
    assert not torch.equal(ddp[0]["lam"], torch.ones_like(ddp[0]["lam"]))  # DelTA reweighted the tokens


def test_fsdp2_equals_ddp(ddp, fsdp):
    assert [r["distributed_type"] for r in fsdp] == ["DistributedType.FSDP"] * 2
    for r in fsdp:  # really sharded: DTensor parameters, each rank holding about half of the elements
        assert r["layout"]["kinds"] == ["dtensor"] and r["layout"]["local"] < 0.6 * r["layout"]["full"]
    assert fsdp[0]["layout"]["local"] + fsdp[1]["layout"]["local"] == fsdp[0]["layout"]["full"]
    _check_same_training(ddp, fsdp, params_atol=1e-6)


def test_deepspeed_zero3_equals_ddp(ddp, zero3):
    assert [r["distributed_type"] for r in zero3] == ["DistributedType.DEEPSPEED"] * 2
    for r in zero3:  # really partitioned: every parameter split over the two ranks
        assert r["layout"]["kinds"] == ["zero3-partitioned"] and r["layout"]["local"] < 0.6 * r["layout"]["full"]
    _check_same_training(ddp, zero3, params_atol=1e-5)
