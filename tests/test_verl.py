"""DelTA on verl 0.9.1 (delta_repro.verl, nbs/10_verl.ipynb), on CPU, in the optional verl environment
(scripts/verl_env.sh makes .venv-verl; DELTA_VERL_PYTHON may point at another one). Skips, saying so, where that
environment is absent or DELTA_SKIP_VERL=1.

Here, in the main environment, DeltaGRPOTrainer (TRL 1.16) makes the reference: a tiny Qwen3, one generation batch,
Â, λ̄ from delta_coefficients, old log-probs away from the current ones (the clips act), and TRL's loss and gradient
for loss_type dapo, grpo and dr_grpo (verl's token-mean, seq-mean-token-mean, seq-mean-token-sum-norm), with and
without λ̄. tests/verl_worker.py then runs the same model and batch through verl's code in .venv-verl (TRL and verl's
FSDP engine cannot share an environment: see scripts/verl_env.sh) and reports. Checked:
- the plugin's loss and gradient equal TRL's to 1e-6 in each mode, delta and none, in both of verl's layouts;
- the proxies captured during verl's forward pass equal completion_proxies (00_proxies);
- two gloo processes give the coefficients, the token selection and the loss gradient of one;
- every METHODS entry is expressed with λ̄ equal to the TRL trainer's computation, or refused with a reason;
- one DelTA update through verl's forward-step code trains; the worker's own methods (around a stand-in for verl's
  TrainingWorker, which needs CUDA) capture the old-log-prob pass only and put λ̄ into verl's update; the recipe scripts/verl_delta.sh composes (hydra) to the
  paper's Table 5 settings;
- verl's own CPU loss tests pass with the plugin loaded."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
VERL_PYTHON = Path(os.environ.get("DELTA_VERL_PYTHON", ROOT / ".venv-verl" / "bin" / "python"))
ENV = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT))
TOL = 1e-6


def _skip_unless_verl():
    if os.environ.get("DELTA_SKIP_VERL") == "1":
        pytest.skip("DELTA_SKIP_VERL=1: the verl tests were switched off")
    if not VERL_PYTHON.exists():
        pytest.skip(f"the optional verl environment is absent ({VERL_PYTHON}): `bash scripts/verl_env.sh` creates it")


def make_reference(out: Path, tok, toy_ds) -> Path:
    "TRL's losses and gradients on one batch of a tiny Qwen3 (see the module docstring)."
    from conftest import BASE, prefix_reward
    from delta_repro.coefficients import delta_coefficients
    from delta_repro.models import tiny_causal_lm
    from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer
    torch.manual_seed(0)
    model = tiny_causal_lm(tok, "qwen3", hidden_size=32)
    model.save_pretrained(out / "model")
    tok.save_pretrained(out / "model")
    ref, cases = None, []
    for loss_type in ("dapo", "grpo", "dr_grpo"):
        args = DeltaGRPOConfig(output_dir=str(out / loss_type), **{**BASE, "loss_type": loss_type,
                               "steps_per_generation": 1, "gradient_accumulation_steps": 1})
        tr = DeltaGRPOTrainer(model=model, reward_funcs=prefix_reward, args=args, train_dataset=toy_ds,
                              processing_class=tok)
        tr.model.train()
        tr.current_gradient_accumulation_steps = 1
        if ref is None:
            torch.manual_seed(123)
            batch = tr._generate_and_score_completions(next(iter(tr.get_train_dataloader())))
            # completions of different lengths (the tiny policy rarely stops): the aggregation modes then differ
            B, T = batch["completion_ids"].shape
            lengths = torch.tensor([T, T - 1, 4, 3, T, 2, T, 1])[:B].clamp(1, T)
            keep = torch.arange(T)[None] < lengths[:, None]
            batch["completion_mask"] = keep.long()
            batch["completion_ids"] = batch["completion_ids"].masked_fill(~keep, tok.pad_token_id)
            batch["num_items_in_batch"] = keep.sum()
            ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
            attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
            with torch.no_grad():
                logps, _, _ = tr._get_per_token_logps_and_entropies(tr.model, ids, attn, T)
            g = torch.Generator().manual_seed(0)
            old = logps + 0.3 * torch.randn(B, T, generator=g)
            adv = torch.randn(B, generator=g)
            lam_bar = delta_coefficients(torch.randn(B, T, 8, generator=g), adv, batch["completion_mask"]).weights
            ref = dict(prompt_ids=batch["prompt_ids"], prompt_mask=batch["prompt_mask"],
                       completion_ids=batch["completion_ids"], completion_mask=batch["completion_mask"],
                       advantages=adv, old_logps=old, logps=logps, lam_bar=lam_bar, num_items=batch["num_items_in_batch"],
                       max_completion_length=args.max_completion_length, model_dir=str(out / "model"))
        for credit in ("delta", "none"):
            w = ref["lam_bar"] if credit == "delta" else torch.ones_like(ref["lam_bar"])
            inputs = {k: ref[k] for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
            inputs.update(old_per_token_logps=ref["old_logps"], advantages=ref["advantages"][:, None] * w,
                          num_items_in_batch=ref["num_items"])
            tr.model.zero_grad()
            loss = tr._compute_loss(tr.model, inputs)
            loss.backward()
            loss = loss.detach()
            grads = {n: p.grad.detach().clone() for n, p in tr.model.named_parameters() if p.grad is not None}
            cases.append(dict(mode=loss_type, credit=credit, loss=loss.item(), grads=grads))
    ref["cases"] = cases
    torch.save(ref, out / "reference.pt")
    return out / "reference.pt"


@pytest.fixture(scope="module")
def report(tmp_path_factory, tok, toy_ds):
    _skip_unless_verl()
    out = tmp_path_factory.mktemp("verl")
    ref = make_reference(out, tok, toy_ds)
    overrides = out / "overrides.txt"
    overrides.write_text(subprocess.run(["bash", str(ROOT / "scripts" / "verl_delta.sh")], env=dict(ENV, DELTA_VERL_PRINT="1"),
                                        capture_output=True, text=True, check=True).stdout)
    res = subprocess.run([str(VERL_PYTHON), str(ROOT / "tests" / "verl_worker.py"), str(ref), str(out / "report.json"),
                          str(overrides)], capture_output=True, text=True, timeout=900, env=ENV, cwd=out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    return json.loads((out / "report.json").read_text())


def test_the_plugin_loads_through_the_entry_point(report):
    assert report["plugin_loaded"]  # verl's trainers build DeltaActorRolloutRefWorker


def test_verl_finds_the_plugin_installed_from_the_wheel(request, tmp_path):
    """docs/scale.md's install: the built wheel, without its dependencies, into verl's environment; importing verl
    loads the plugin from there through the `verl.plugins` entry point (ahead of the clone's editable install)."""
    _skip_unless_verl()
    wheel = request.getfixturevalue("dist")[1]  # built only where verl's environment exists
    site = tmp_path / "site"
    subprocess.run([str(VERL_PYTHON), "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, env={k: v for k, v in ENV.items() if k != "PYTHONPATH"})
    code = "import sys, verl; m = sys.modules.get('delta_repro.verl'); print(m.__file__ if m else 'not loaded')"
    res = subprocess.run([str(VERL_PYTHON), "-c", code], cwd=tmp_path, env=dict(ENV, PYTHONPATH=str(site)),
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == str(site / "delta_repro" / "verl.py")


@pytest.mark.parametrize("mode", ["dapo", "grpo", "dr_grpo"])
@pytest.mark.parametrize("credit", ["delta", "none"])
@pytest.mark.parametrize("layout", ["padded", "rmpad"])
def test_loss_and_gradient_equal_the_trl_trainers(report, mode, credit, layout):
    r = report["loss"][f"{mode}/{credit}/{layout}"]
    assert r["logp_diff"] < TOL  # verl's forward step gives the trainer's log-probs
    assert r["loss_diff"] < TOL and abs(r["loss"]) > 1e-3, r
    assert r["grad_diff"] < TOL and r["grad_scale"] > 1e-3, r
    assert 0 < r["clipfrac"] < 1  # the clips act on this batch


def test_delta_and_the_modes_change_the_loss(report):
    "The batch tells the cases apart: λ̄ changes the loss, and so does each aggregation mode."
    loss = {k: v["loss"] for k, v in report["loss"].items() if k.endswith("/padded")}
    assert abs(loss["dapo/delta/padded"] - loss["dapo/none/padded"]) > 1e-4
    for a, b in (("dapo", "grpo"), ("dapo", "dr_grpo"), ("grpo", "dr_grpo")):
        assert abs(loss[f"{a}/delta/padded"] - loss[f"{b}/delta/padded"]) > 1e-4, (a, b, loss)


@pytest.mark.parametrize("layout", ["padded", "rmpad"])
def test_proxies_captured_in_verls_pass_equal_ours(report, layout):
    c = report["capture"][layout]
    assert c["n_rows"] == 8 and c["hook_removed"] and len(set(c["lengths"])) > 3  # rows cut to each response
    assert c["max_diff"] < 1e-5 * max(1.0, c["scale"]), c


def test_every_method_is_expressed_or_refused_with_a_reason(report):
    m = report["methods"]
    supported = {k for k, v in m.items() if v["supported"]}
    assert {"DelTA", "Within-side only", "w/o adaptive γ", "w/o H(α)", "w/o λ-norm", "w/o range map",
            "w/o refinement", "Random λ", "K=2", "K=3", "λ∈[0.5,1.2]", "λ∈[0.8,1.5]", "λ∈[0.5,1.5]", "Top-50%",
            "Random-50%", "Bottom-50%", "DAPO"} <= supported
    for name in supported:
        assert m[name]["max_diff"] < TOL, (name, m[name])
    refused = {k: v["reason"] for k, v in m.items() if not v["supported"]}
    assert set(refused) == {"DAPO w/ Forking Tokens", "SAPO", "GRPO", "FIPO", "Top-K hidden gradient", "Placebo", "Oracle premise"}
    assert "loss_mode" in refused["SAPO"] and "FSDP" in refused["Top-K hidden gradient"]
    assert abs(m["DelTA"]["mean_weight"] - 1) < 1e-5 and abs(m["w/o λ-norm"]["mean_weight"] - 1) > 1e-3


def test_two_processes_give_the_statistics_of_one(report):
    dp = report["dp"]
    for name in ("DelTA", "w/o λ-norm", "K=2", "Within-side only"):
        assert dp[name] < TOL, (name, dp[name])
    assert dp["Top-50%_selected"] == round(0.5 * dp["Top-50%_valid"]) and dp["Top-50%_ranked"]
    assert dp["local_vs_per_shard"] < TOL and dp["local_vs_global"] > 1e-4  # local statistics: per shard, and different
    assert dp["loss_diff"] < TOL and dp["grad_diff"] < TOL


def test_one_delta_step_through_verls_forward_step(report):
    s = report["step"]
    assert math.isfinite(s["loss"]) and s["moved"] > 1e-5
    assert s["old_logp_diff"] < TOL and 0.8 <= s["lam_mean"] <= 1.2 and abs(s["weight_mean"] - 1) < 1e-5


def test_the_workers_methods_put_delta_into_verls_update(report):
    "DeltaActorRolloutRefWorker around a stand-in for verl's TrainingWorker (which needs CUDA), see verl_worker.py."
    w = report["worker"]
    assert w["loss_fn"] == "delta_ppo_loss" and w["cached_after_ref_pass"] == 0 and w["cached_after_old_pass"] == 8
    assert w["weights_diff"] < TOL and w["cache_emptied"] and w["advantages_untouched"]
    assert 0.8 <= w["lam_mean"] <= 1.2 and math.isfinite(w["loss"]) and w["grad"] > 0


def test_the_recipe_composes_to_table_5(report):
    r = report["recipe"]
    assert r["is_actor_config"] and r["train_batch_size"] == 128 and r["n"] == 16 and r["ppo_mini_batch_size"] == 32
    assert (r["max_prompt_length"], r["max_response_length"], r["truncation"]) == (2048, 20480, "left")
    assert (r["lr"], r["weight_decay"], r["grad_clip"]) == (1e-6, 0.1, 1.0)
    assert (r["clip_ratio_low"], r["clip_ratio_high"], r["clip_ratio_c"]) == (0.2, 0.28, 10.0)
    assert (r["loss_agg_mode"], r["loss_mode"], r["adv_estimator"]) == ("token-mean", "vanilla", "grpo")
    assert not r["use_kl_loss"] and not r["use_kl_in_reward"] and r["entropy_coeff"] == 0
    assert (r["temperature"], r["top_p"], r["ppo_epochs"]) == (1.0, 1.0, 1)
    assert (r["total_training_steps"], r["n_gpus_per_node"], r["test_freq"]) == (220, 8, 4)
    assert r["reward_manager"] == "dapo" and r["overlong"]["len"] == 4096 and r["overlong"]["penalty_factor"] == 1.0
    assert r["max_resp_len"] == 20480
    assert r["delta"]["credit_assignment"] == "delta" and r["delta"]["delta_K"] == 1
    assert (r["delta"]["delta_lam_min"], r["delta"]["delta_lam_max"]) == (0.8, 1.2)


def test_verls_own_cpu_loss_tests_pass_with_the_plugin_loaded():
    _skip_unless_verl()
    site = subprocess.run([str(VERL_PYTHON), "-c", "import verl, os; print(os.path.dirname(os.path.dirname(verl.__file__)))"],
                          capture_output=True, text=True, check=True, env=ENV).stdout.strip()
    files = sorted((Path(site) / "tests" / "trainer" / "ppo").glob("*_on_cpu.py"))  # the wheel ships them
    names = {f.name for f in files}
    assert {"test_core_algos_on_cpu.py", "test_loss_aggregation_on_cpu.py", "test_dynamic_policy_losses_on_cpu.py",
            "test_value_loss_normalization_on_cpu.py"} <= names, names
    # -p imports the plugin into pytest's process before any test module (the entry point imports it again with verl)
    res = subprocess.run([str(VERL_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "delta_repro.verl",
                          "-W", "ignore", *map(str, files)],
                         capture_output=True, text=True, timeout=600, cwd=site,
                         env=dict(ENV, VERL_USE_EXTERNAL_MODULES="delta_repro.verl"))
    tail = res.stdout[-2000:] + res.stderr[-2000:]
    assert res.returncode == 0, tail
    passed = int(re.search(r"(\d+) passed", tail).group(1))
    assert passed >= 100 and " failed" not in tail, tail  # 118 with verl 0.9.1
