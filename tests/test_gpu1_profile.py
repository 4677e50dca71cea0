"""The one-GPU profile (configs/gpu1.yaml): its hub loaders on fixture files in the hub's schema, its plan and dry
run, reproduce.sh's choice of it on a one-GPU machine, and its whole code path (plan -> hub backbone -> hub data ->
DelTA through TRL -> evaluation) at tiny size on CPU."""
import json
import os
import stat
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from delta_repro import data
from delta_repro.experiments import estimate_gpu_hours, evaluate_run, load_plan, run_settings, train_run
from delta_repro.rewards import math_reward

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures"
GPU1 = ROOT / "configs" / "gpu1.yaml"


def test_math_train_loader_on_hub_schema_fixture():
    ds = data.load_math_train(FIX / "math_lighteval.jsonl")
    assert len(ds) == 2  # the row whose solution has no \boxed{} is left out
    assert ds["answer"] == ["4", r"\frac{5}{6}"] and ds["problem_id"] == ["MATH-train-0", "MATH-train-1"]
    assert set(ds["source"]) == {"MATH-train"} and ds[0]["prompt"].endswith(data.MATH_INSTRUCTION)
    assert math_reward([r"so $x = \boxed{4}$", r"\boxed{10/12}"], ds["answer"]) == [1.0, 1.0]
    assert data.load_math_train(FIX / "math_lighteval.jsonl", template="chat")[0]["prompt"][0]["role"] == "user"
    with pytest.raises(ValueError, match="columns"):
        data.load_math_train(FIX / "gpqa_diamond.jsonl")  # another hub schema: no `problem`, no `solution`
    with pytest.raises(ValueError, match="no usable rows"):
        data.load_math_train(FIX / "aime_2024.jsonl")  # its solutions are "...": no \boxed{} answer anywhere


def test_math500_loader_on_hub_schema_fixture():
    ds = data.load_math500(FIX / "math500.jsonl")
    assert ds["problem_id"] == ["test/precalculus/807.json", "test/algebra/2592.json"]
    assert ds["answer"][1] == "26000" and set(ds["source"]) == {"MATH-500"}
    assert math_reward([r"The answer is $\boxed{26000}$."], [ds["answer"][1]]) == [1.0]


def test_gpu1_plan_is_delta_vs_dapo_with_seeds_and_ablations_in_about_a_day():
    plan = load_plan(GPU1)
    (backbone,) = plan.raw["backbones"].values()
    assert backbone["kind"] == "hub" and backbone["id"] == "Qwen/Qwen3-0.6B-Base" and backbone["dtype"] == "float32"
    task = plan.raw["tasks"]["math"]
    assert task["train"]["loader"] == "load_math_train"
    assert {s["loader"] for s in task["eval"].values()} == {"load_math_train", "load_math500", "load_aime24", "load_aime25"}
    assert plan.raw["selection"]["every"] == 0  # so the selection set is never used to choose a checkpoint
    seeds = {m: {r.seed for r in plan.runs.values() if r.method == m} for m in ("DelTA", "DAPO")}
    assert seeds == {"DelTA": {0, 1, 2}, "DAPO": {0, 1, 2}}
    assert {"w/o adaptive γ", "w/o H(α)", "w/o λ-norm", "w/o range map", "w/o refinement"} <= {r.method for r in plan.runs.values()}
    kw = run_settings(plan, next(iter(plan.runs.values())))
    assert kw["use_vllm"] and kw["vllm_mode"] == "colocate" and kw["bf16"]
    per_update = kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"]
    assert kw["steps_per_generation"] // kw["gradient_accumulation_steps"] == 4  # 4 updates per rollout batch
    assert per_update % kw["num_generations"] == 0
    hours = sum(estimate_gpu_hours(plan, gpus=1).values())
    assert 12 <= hours <= 30, hours  # about a day of one GPU


def _dry_run(*args, path=None):
    env = dict(os.environ)
    if path is not None:  # a stand-in nvidia-smi: scripts/env.sh must not take it as a reason to add vLLM
        env["PATH"], env["DELTA_WITH_VLLM"] = f"{path}:{env['PATH']}", "0"
    return subprocess.run(["bash", "reproduce.sh", "--dry-run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)


def test_gpu1_dry_run_prints_the_plan_and_gpu_hours():
    res = _dry_run("--profile", "gpu1")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "profile gpu1: 12 runs" in res.stdout and "Qwen3-0.6B-Base__math__DelTA__s2" in res.stdout
    assert "GPU-h" in res.stdout and "GPU-hours on 1 GPU per run" in res.stdout and "nothing was run" in res.stdout


@pytest.mark.parametrize("n_gpus, profile", [(1, "gpu1"), (2, "paper")])
def test_reproduce_picks_the_profile_from_the_number_of_gpus(tmp_path, n_gpus, profile):
    fake = tmp_path / "nvidia-smi"  # a stand-in that lists n GPUs the way `nvidia-smi -L` does
    fake.write_text("#!/bin/sh\n" + "".join(f"echo 'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})'\n" for i in range(n_gpus)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    res = _dry_run(path=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith(f"profile {profile}:") or f"\nprofile {profile}:" in res.stdout, res.stdout[:500]


def _tiny_gpu1_plan(tmp_path):
    """gpu1.yaml with only what a CPU needs changed: the backbone is a saved tiny Qwen3 loaded through the same hub
    path (kind hub, float32), the hub sets are files in the hub's schema, sizes are tiny, and vLLM is off (it runs in
    tests/test_vllm.py) — the loaders, rewards, overlong penalty, trainer and evaluation are gpu1's own."""
    from conftest import PAIRS
    from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer
    raw = yaml.safe_load(GPU1.read_text())
    model_dir = tmp_path / "tiny-qwen3"
    tok = train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)
    tiny_causal_lm(tok, "qwen3", hidden_size=32).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    (name,) = raw["backbones"]
    raw["backbones"][name].update(id=str(model_dir))
    # 400 problems in MATH's schema (MATH-lighteval), split by hash as gpu1 splits MATH's training set: ~320 for
    # training, ~20 for the selection probe (it takes 2)
    train = tmp_path / "math_train.jsonl"
    train.write_text("\n".join(json.dumps({"problem": f"What is ${a} + {b}$?", "level": "Level 1", "type": "Prealgebra",
                                           "solution": f"${a} + {b} = \\boxed{{{a + b}}}$."}) for a in range(20) for b in range(20)))
    fixtures = {"load_math_train": train, "load_math500": FIX / "math500.jsonl", "load_aime24": FIX / "aime_2024.jsonl",
                "load_aime25": FIX / "aime25.jsonl"}
    task = raw["tasks"]["math"]
    for spec in [task["train"], *task["eval"].values()]:
        spec["source"] = str(fixtures[spec["loader"]])
    task["eval"]["MATH-select-64"]["limit"] = 2
    raw["steps"] = 2
    raw["trainer"].update(use_vllm=False, bf16=False, per_device_train_batch_size=4, num_generations=4,
                          gradient_accumulation_steps=1, steps_per_generation=4, max_completion_length=12,
                          overlong_buffer=4, learning_rate=1e-3)
    raw["evaluation"].update(k=2, repeats=2, max_new_tokens=8, batch_size=8)
    raw["artefacts"] = {"table1_main": {"backbone": name, "task": "math", "methods": ["DelTA"], "seeds": [0]}}
    path = tmp_path / "gpu1-tiny.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True))
    return load_plan(path)


def test_gpu1_code_path_runs_at_tiny_size_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path / "cache"))
    plan = _tiny_gpu1_plan(tmp_path)
    (rid,) = plan.runs
    out = train_run(plan, rid, tmp_path / "runs")
    meta = json.loads((out / "DONE").read_text())
    assert meta["profile"] == "gpu1" and meta["trainer_args"]["credit_assignment"] == "delta"
    assert meta["trainer_args"]["overlong_buffer"] == 4 and meta["trainer_args"]["loss_type"] == "dapo"
    log = json.loads((out / "log_history.json").read_text())
    assert [l["step"] for l in log if "loss" in l] == [1, 2]
    assert any("delta/lam_mean" in l for l in log)
    assert any("rewards/soft_overlong_punishment_reward/mean" in l for l in log)  # DAPO's overlong penalty is a reward
    res = pd.read_csv(evaluate_run(plan, rid, tmp_path / "runs"))
    assert set(res["benchmark"]) == {"MATH-select-64", "MATH-500", "AIME24", "AIME25"}
    assert res.groupby("benchmark")["problem_id"].nunique().to_dict() == {"AIME24": 2, "AIME25": 2, "MATH-500": 2,
                                                                           "MATH-select-64": 2}
