"""Every shipped accelerate config (configs/accelerate/*.yaml) parses with accelerate's own loader and agrees with the
paper's training settings (`trainer.paper_config`) and with the paper plan that reproduce.sh launches with it."""
import re
from pathlib import Path

import pytest
import yaml
from accelerate.commands.config.config_args import load_config_from_file

from delta_repro.experiments import load_plan, run_settings
from delta_repro.trainer import PAPER_PROMPTS, PAPER_ROLLOUTS, PAPER_UPDATES, paper_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs" / "accelerate").glob("*.yaml"))
GPUS_PER_NODE = 8


def test_every_config_is_tested():
    assert {p.name for p in CONFIGS} == {"deepspeed_zero3_1x8.yaml", "deepspeed_zero3_2x8_multinode.yaml", "fsdp_1x8.yaml"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_agrees_with_paper_config(path, tmp_path):
    cfg = load_config_from_file(str(path))  # accelerate's own parser: unknown keys or types fail here
    raw = yaml.safe_load(path.read_text())
    nodes, per_node = map(int, re.search(r"(\d+)x(\d+)", path.stem).groups())  # the file name states the layout
    assert (cfg.num_machines, cfg.num_processes) == (nodes, nodes * per_node) and per_node == GPUS_PER_NODE
    assert cfg.use_cpu is False and raw["distributed_type"] in ("DEEPSPEED", "FSDP")
    args = paper_config(str(tmp_path), num_processes=cfg.num_processes, use_cpu=True)  # bf16 kept: checked below
    # batch arithmetic: 512 completions per optimizer step, 4 updates per rollout batch of 128 prompts x 16
    per_update = args.per_device_train_batch_size * args.gradient_accumulation_steps * cfg.num_processes
    assert per_update == PAPER_PROMPTS * PAPER_ROLLOUTS // PAPER_UPDATES == 512
    generation_batch = args.per_device_train_batch_size * args.steps_per_generation * cfg.num_processes
    assert generation_batch == PAPER_PROMPTS * PAPER_ROLLOUTS and generation_batch // per_update == PAPER_UPDATES
    assert generation_batch % args.num_generations == 0
    # the paper plan as train_run launches it under this config (WORLD_SIZE = its processes): the same batch; the plan's
    # 8-GPU gradient accumulation used as written gave 1,024 completions per update on two nodes (issue 21)
    plan = load_plan(ROOT / "configs" / "paper.yaml")
    for run in plan.runs.values():
        kw = run_settings(plan, run, num_processes=cfg.num_processes)
        assert kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"] * cfg.num_processes == 512
        assert kw["per_device_train_batch_size"] * kw["steps_per_generation"] * cfg.num_processes == 2048
        assert (kw["gradient_accumulation_steps"], kw["steps_per_generation"]) == (args.gradient_accumulation_steps,
                                                                                  args.steps_per_generation)
    # mixed precision: the config's bf16 is the trainer's bf16
    assert cfg.mixed_precision == "bf16" and args.bf16
    if raw["distributed_type"] == "DEEPSPEED":
        ds = cfg.deepspeed_config
        assert ds["zero_stage"] == 3 and ds["zero3_init_flag"] and ds["zero3_save_16bit_model"]
        assert ds["gradient_clipping"] == args.max_grad_norm == 1.0
    else:
        fs = cfg.fsdp_config
        assert fs["fsdp_version"] == 2 and fs["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
        # transformers refuses to start when both FSDP's and the trainer's activation checkpointing are on
        assert not (fs.get("fsdp_activation_checkpointing") and args.gradient_checkpointing)


def test_plan_batch_is_rescaled_to_the_launch_or_refused():
    plan = load_plan(ROOT / "configs" / "paper.yaml")
    run = next(iter(plan.runs.values()))
    assert run_settings(plan, run) == run_settings(plan, run, num_processes=8)  # as written: 4 × 16 × 8 = 512
    assert run_settings(plan, run, num_processes=32)["gradient_accumulation_steps"] == 4
    for bad in (3, 256, 0):  # 512 completions over 3 or 256 processes of 4: not whole micro-batches
        with pytest.raises(ValueError, match="num_processes"):
            run_settings(plan, run, num_processes=bad)


def test_paper_plan_matches_the_config_reproduce_sh_launches():
    "reproduce.sh --profile paper runs every run with deepspeed_zero3_1x8.yaml: the plan's batch must fit 8 processes."
    cfg = load_config_from_file(str(ROOT / "configs" / "accelerate" / "deepspeed_zero3_1x8.yaml"))
    assert "deepspeed_zero3_1x8.yaml" in (ROOT / "reproduce.sh").read_text()
    plan = load_plan(ROOT / "configs" / "paper.yaml")
    ref = paper_config("/tmp/x", num_processes=cfg.num_processes, use_cpu=True)
    for key, value in plan.raw["trainer"].items():
        # not training settings of the paper: rollout engine, logging, where DelTA's proxies are kept between sweeps
        if hasattr(ref, key) and key not in ("use_vllm", "vllm_mode", "logging_steps", "proxy_cache"):
            assert getattr(ref, key) == value, key
