"""reproduce.sh and the experiment machinery: plans validate, dry runs print, the smoke profile's artefacts exist
(test.sh runs the smoke profile first and sets DELTA_SMOKE_RAN=1), reruns skip finished work, runs resume."""
import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from delta_repro.experiments import (ARTEFACTS, describe_plan, estimate_gpu_hours, load_plan, prompt_template, run_settings,
                                     selection_settings, train_run)
from delta_repro.scores import learning_curve

ROOT = Path(__file__).resolve().parents[1]
SMOKE = os.environ.get("DELTA_SMOKE_RAN") == "1"


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_every_profile_plan_validates_and_covers_every_artefact(profile):
    plan = load_plan(ROOT / "configs" / f"{profile}.yaml")
    bases = {a.split("@")[0] for a in plan.artefact_runs}
    assert set(ARTEFACTS) - {"table9_smollm2"} <= bases, set(ARTEFACTS) - bases
    # a run shared by several artefacts is one run
    assert len(plan.runs) == len({r for ids in plan.artefact_runs.values() for r in ids})


def test_cpu_profile_trains_several_seeds_and_a_real_pretrained_model():
    plan = load_plan(ROOT / "configs" / "cpu.yaml")
    seeds = {m: {r.seed for r in plan.runs.values() if r.method == m and r.backbone == "tiny-qwen3" and r.task == "math"}
             for m in ("DelTA", "DAPO")}
    assert all(len(s) >= 8 for s in seeds.values())  # DelTA vs DAPO with stated power (3 vs 3 cannot reach p < 0.05)
    others = {r.method for r in plan.runs.values()} - {"DelTA", "DAPO"}
    for m in others:  # every other method or variant with at least 2 seeds
        assert len({r.seed for r in plan.runs.values() if r.method == m}) >= 2, m
    assert any(plan.raw["backbones"][r.backbone]["kind"] == "smollm2" for r in plan.runs.values())
    assert {"tiny-qwen3", "tiny-olmo3"} <= {r.backbone for r in plan.runs.values()}


def test_bad_plans_are_rejected(tmp_path):
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    for key, bad, msg in [("artefacts", {"table99": {}}, "unknown artefact"),
                          ("artefacts", {"table1_main": {"backbone": "tiny-qwen3", "task": "math", "methods": ["PPO"]}}, "unknown method"),
                          ("artefacts", {"table1_main": {"backbone": "gpt", "task": "math", "methods": ["DAPO"]}}, "unknown backbone")]:
        p = tmp_path / "plan.yaml"
        p.write_text(yaml.safe_dump({**raw, key: bad}, allow_unicode=True))
        with pytest.raises(ValueError, match=msg):
            load_plan(p)
    p.write_text(yaml.safe_dump({k: v for k, v in raw.items() if k != "trainer"}, allow_unicode=True))
    with pytest.raises(ValueError, match="trainer"):
        load_plan(p)


def _art(**kw):
    return {"table1_main": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DelTA"], "seeds": [0], **kw}}


@pytest.mark.parametrize("edit, msg", [
    (lambda r: r.update(artefacts=_art(seeds="12")), "seeds"),          # a string would iterate as seeds 1 and 2
    (lambda r: r.update(artefacts=_art(seeds=[0.7])), "seeds"),
    (lambda r: r.update(artefacts=_art(seeds=[-1])), "seeds"),
    (lambda r: r.update(artefacts=_art(methods="DelTA")), "methods"),
    (lambda r: r.update(artefacts={"table1_main": {"backbone": "tiny-qwen3", "task": "math"}}), "methods"),
    (lambda r: r.update(artefacts=_art(steps=0)), "steps"),
    (lambda r: r.update(artefacts=_art(kind="bogus")), "kind"),
    (lambda r: r.update(artefacts=_art(ood=True)) or r["tasks"]["math"].pop("ood", None), "ood"),
    (lambda r: r.update(artefacts={"fig1_overview": {"kind": "batch", "backbone": "tiny-qwen3", "task": "math"}}), "method"),
    (lambda r: r.update(artefacts={"table1_main": None}), "mapping"),
    (lambda r: r.update(steps=2.5), "steps"),
    (lambda r: r["evaluation"].update(k=0), "evaluation.k"),
    (lambda r: r["tasks"]["math"].update(reward="chem"), "reward"),
    (lambda r: r["tasks"]["math"].update(select="nowhere"), "select"),
    (lambda r: r["backbones"]["tiny-qwen3"].update(kind="giant"), "kind"),
    (lambda r: r["backbones"]["tiny-qwen3"].update(selection={"dtype": "bf16"}), "selection.dtype"),
    (lambda r: r["evaluation"].update(dtype="int8"), "evaluation.dtype"),
])
def test_malformed_plans_fail_at_load_time_naming_the_entry(tmp_path, edit, msg):
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    edit(raw)
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(ValueError, match=msg):
        load_plan(p)
    p.write_text("just a string\n")
    with pytest.raises(ValueError, match="mapping"):
        load_plan(p)


def test_paper_dry_run_prints_the_plan_with_gpu_hours():
    res = subprocess.run(["bash", "reproduce.sh", "--profile", "paper", "--dry-run"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "GPU-h" in res.stdout and "Qwen3-8B-Base__deepmath__DelTA__s0" in res.stdout and "nothing was run" in res.stdout
    n = len(load_plan(ROOT / "configs" / "paper.yaml").runs)  # nothing of the paper profile is trained here
    assert f"dry run: {n} of {n} runs would be trained (0 already trained and evaluated)" in res.stdout
    assert "warm start Qwen3-8B-Base / deepmath: would be built if not cached, then evaluated" in res.stdout
    hours = estimate_gpu_hours(load_plan(ROOT / "configs" / "paper.yaml"))
    assert 100 < hours["Qwen3-8B-Base__deepmath__DelTA__s0"] < 1000


def test_bad_arguments_are_refused():
    res = subprocess.run(["bash", "reproduce.sh", "--profile", "gpu"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 2 and "profile" in res.stderr
    res = subprocess.run(["bash", "reproduce.sh", "--profile", "smoke", "--only", "table99", "--dry-run"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0 and "table99" in res.stderr


@pytest.mark.parametrize("args, msg", [
    (["--profile="], "empty"),  # was: silently the default profile
    (["--profile", ""], "empty"),
    (["--profile"], "--profile needs"),
    (["--profile", "smoke", "--only"], "--only needs"),  # was: every artefact
    (["--only", "--dry-run"], "--only needs"),
    (["--profile", "smoke", "--dry-run", "--reports-only"], "cannot be combined"),  # was: one flag silently won
    (["--reports-only", "--dry-run"], "cannot be combined"),
    (["--jobs"], "--jobs needs"),  # was: the default of 2, and a full training run
    (["--jobs", "--dry-run"], "--jobs needs"),
    (["--jobs="], "--jobs needs"),
])
def test_ambiguous_arguments_are_usage_errors(args, msg):
    res = subprocess.run(["bash", "reproduce.sh", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and msg in res.stderr, (res.returncode, res.stderr)
    assert "[env]" not in res.stdout  # refused before the environment is touched


@pytest.mark.skipif(not SMOKE, reason="needs the smoke profile's outputs (bash test.sh runs it first)")
def test_reports_only_trains_nothing_and_remakes_the_reports():
    evals = sorted((ROOT / "runs" / "smoke" / "runs").glob("*/eval.csv"))
    before = {p: p.stat().st_mtime_ns for p in evals}
    res = subprocess.run(["bash", "reproduce.sh", "--profile", "smoke", "--only", "table1_main", "--reports-only"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "report table1_main" in res.stdout and "to do)" not in res.stdout  # no run was trained
    assert {p: p.stat().st_mtime_ns for p in evals} == before
    assert (ROOT / "figures" / "smoke" / "table1_main.md").exists()


def _one_run(tmp_path, monkeypatch, method: str, steps: int, every: int | None = None):
    "A plan of one smoke run (tiny-qwen3, math, seed 0) of `steps` steps, evaluated every `every` steps: (plan, run id)."
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path / "cache"))
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    raw["steps"] = steps
    if every is not None: raw["selection"]["every"] = every
    raw["artefacts"] = {"table1_main": {"backbone": "tiny-qwen3", "task": "math", "methods": [method], "seeds": [0]}}
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    plan = load_plan(p)
    (rid,) = plan.runs
    return plan, rid


def test_interrupted_run_resumes_and_finished_run_is_kept(tmp_path, monkeypatch):
    plan, rid = _one_run(tmp_path, monkeypatch, "DelTA", steps=4)

    from transformers import TrainerCallback
    import delta_repro.experiments as ex

    class Crash(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            if state.global_step == 2:
                raise KeyboardInterrupt("simulated interruption after the checkpoint of step 2")

    real_add = ex.DeltaGRPOTrainer.add_callback
    monkeypatch.setattr(ex.DeltaGRPOTrainer, "add_callback", lambda self, cb: (real_add(self, cb), real_add(self, Crash())))
    with pytest.raises(KeyboardInterrupt):
        train_run(plan, rid, tmp_path / "runs", save_every=1)
    out = tmp_path / "runs" / rid
    assert not (out / "DONE").exists() and (out / "trainer" / "checkpoint-2").exists()
    executed = []

    class Count(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            executed.append(state.global_step)

    monkeypatch.setattr(ex.DeltaGRPOTrainer, "add_callback", lambda self, cb: (real_add(self, cb), real_add(self, Count())))
    train_run(plan, rid, tmp_path / "runs", save_every=1)
    assert sorted(set(executed)) == [3, 4]  # resumed from checkpoint-2: steps 1-2 were not trained again
    steps = [h["step"] for h in json.loads((out / "log_history.json").read_text()) if "loss" in h]
    assert steps == [1, 2, 3, 4]  # and the log of the interrupted part was kept
    done = (out / "DONE").read_text()
    train_run(plan, rid, tmp_path / "runs")
    assert (out / "DONE").read_text() == done  # a finished run is left as it is


@pytest.mark.skipif(not SMOKE, reason="needs the smoke profile's outputs (bash test.sh runs it first)")
def test_smoke_profile_wrote_every_artefact():
    figs = ROOT / "figures" / "smoke"
    for art in ARTEFACTS:
        if art == "table9_smollm2":
            continue
        assert list(figs.glob(f"{art}*")), art
    t1 = pd.read_csv(figs / "table1_main.csv", index_col=0)
    assert {"ours", "sd", "seeds", "ours Δ vs DAPO", "Δ low", "Δ high", "paper", "paper Δ vs DAPO", "paper rank",
            "our rank", "flag"} <= set(t1.columns)
    assert "diff" not in t1.columns  # no "ours − paper": the benchmarks differ
    assert set(t1.index) >= {"DAPO", "DelTA", "SAPO", "FIPO", "DAPO w/ Forking Tokens"}
    assert t1.loc["DelTA", "paper"] == pytest.approx(26.13, abs=5)  # the paper's number is shown, not ours
    assert "nan" not in (figs / "table1_main.md").read_text().lower()
    learning = pd.read_csv(figs / "learning.csv")
    assert {"backbone", "task", "method", "seeds", "warm start", "after RL", "gain", "learns"} <= set(learning.columns)
    claims = json.loads((figs / "claims.json").read_text())
    assert {c["claim"] for c in claims} >= {"DelTA > DAPO", "DAPO > Bottom-50%"}
    for ext in ("png", "pdf"):
        assert (figs / f"fig2_dynamics.{ext}").stat().st_size > 1000
    gaps = pd.read_csv(figs / "results_gaps.csv", index_col=0)  # the results page: DelTA − DAPO per comparison
    assert "table1_main" in gaps.index and (figs / "results_gaps.png").stat().st_size > 1000


@pytest.mark.skipif(not SMOKE, reason="needs the smoke profile's outputs (bash test.sh runs it first)")
def test_rerun_skips_finished_runs_and_never_overwrites_them():
    runs = ROOT / "runs" / "smoke" / "runs"
    plan = load_plan(ROOT / "configs" / "smoke.yaml")
    evals = {rid: (runs / rid / "eval.csv").stat().st_mtime_ns for rid in plan.artefact_runs["table4_proxy"]}
    res = subprocess.run(["bash", "reproduce.sh", "--profile", "smoke", "--only", "table4_proxy"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stdout.count("done, skipped") == len(evals)
    assert {rid: (runs / rid / "eval.csv").stat().st_mtime_ns for rid in evals} == evals
    assert "1 of 1 reports written (table4_proxy)" in res.stdout.split("summary")[-1]


def test_mixed_answer_formats_for_the_warm_start():
    from delta_repro.data import reasoning_gym_suite
    from delta_repro.experiments import mix_answer_formats
    from delta_repro.rewards import math_reward
    ds = reasoning_gym_suite("chain_sum", 200, seed=0)
    mixed = mix_answer_formats(ds, 0.5)
    rewards = math_reward(mixed["solution"], mixed["answer"])
    assert 0.45 <= 1 - sum(rewards) / len(rewards) <= 0.55  # about half can no longer be verified
    assert all(s.startswith("The answer is") for s, r in zip(mixed["solution"], rewards) if r == 0)
    assert mix_answer_formats(ds, 0.5)["solution"] == mixed["solution"]  # deterministic
    assert math_reward(mix_answer_formats(ds, 0.0)["solution"], ds["answer"]) == [1.0] * 200
    with pytest.raises(ValueError, match="share"):
        mix_answer_formats(ds, 1.5)


def test_prompt_template_per_backbone():
    plan = load_plan(ROOT / "configs" / "cpu.yaml")
    assert prompt_template(plan, "smollm2") == "chat" and prompt_template(plan, "tiny-qwen3") == "base"
    with pytest.raises(KeyError): prompt_template(plan, "no-such-backbone")


def test_backbone_overrides_apply_to_every_method_of_that_backbone_only(tmp_path):
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    raw["backbones"]["tiny-olmo3"]["trainer"] = {"learning_rate": 1.0e-5}
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    plan = load_plan(p)
    lr = {rid: run_settings(plan, r)["learning_rate"] for rid, r in plan.runs.items()}
    assert {v for rid, v in lr.items() if rid.startswith("tiny-olmo3")} == {1.0e-5}
    assert {v for rid, v in lr.items() if not rid.startswith("tiny-olmo3")} == {raw["trainer"]["learning_rate"]}
    delta = next(r for r in plan.runs.values() if r.method == "DelTA")
    assert run_settings(plan, delta)["credit_assignment"] == "delta"  # the method's switches come last
    raw["backbones"]["tiny-olmo3"]["trainer"] = {"learning_rat": 1.0e-5}
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(TypeError, match="learning_rat"):
        load_plan(p)


def test_backbone_selection_overrides_and_a_selection_interval_longer_than_the_run_is_refused(tmp_path):
    raw = yaml.safe_load((ROOT / "configs" / "cpu.yaml").read_text())
    plan = load_plan(ROOT / "configs" / "cpu.yaml")
    # SmolLM2's 16 steps: its own interval and answer length; the tiny backbones keep the plan's block
    assert selection_settings(plan.raw, "smollm2") == {**raw["selection"], "every": 16, "max_new_tokens": 64}
    assert selection_settings(plan.raw, "tiny-qwen3") == raw["selection"]
    del raw["backbones"]["smollm2"]["selection"]  # every 25 > table9_smollm2's 16 steps: only step 0 would be scored
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(ValueError, match=r"table9_smollm2: steps 16 < selection.every 25 of backbone smollm2"):
        load_plan(p)
    raw["backbones"]["smollm2"]["selection"] = {"every": -1}
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(ValueError, match=r"backbone smollm2: selection.every must be an int >= 0, got -1"):
        load_plan(p)
    raw["backbones"]["smollm2"]["selection"] = {"every": 0}  # 0: no selection, the final policy: allowed
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    assert selection_settings(load_plan(p).raw, "smollm2")["every"] == 0


def test_choose_last_keeps_the_last_policy_and_a_bad_choice_is_refused(tmp_path):
    from delta_repro.experiments import SelectionCallback
    cb = SelectionCallback(None, None, tmp_path / "best", every=25, k=1, max_new_tokens=4, seed=0)
    cb.history = [{"step": 0, "accuracy": 70.0}, {"step": 25, "accuracy": 60.0}, {"step": 50, "accuracy": 60.0},
                  {"step": 75, "accuracy": 40.0}]
    assert cb.best["step"] == 25  # "best": the most accurate trained checkpoint, ties to the earliest, never step 0
    cb.choose = "last"
    assert cb.best == {"step": 75, "accuracy": 40.0}  # "last": the latest, whatever its accuracy
    with pytest.raises(ValueError, match="choose must be 'best' or 'last', got 'latest'"):
        SelectionCallback(None, None, tmp_path / "best", every=25, k=1, max_new_tokens=4, seed=0, choose="latest")
    raw = yaml.safe_load((ROOT / "configs" / "cpu.yaml").read_text())
    assert selection_settings(load_plan(ROOT / "configs" / "cpu.yaml").raw, "smollm2-long")["choose"] == "last"
    p = tmp_path / "plan.yaml"
    raw["backbones"]["smollm2-long"]["selection"]["choose"] = "best-of"
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(ValueError, match="backbone smollm2-long: selection.choose must be 'best' or 'last'"):
        load_plan(p)
    raw["backbones"]["smollm2-long"]["selection"]["choose"] = "last"  # the last checkpoint scored must be the last step
    raw["artefacts"]["table9_smollm2@long"]["steps"] = 110
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(ValueError, match=r"table9_smollm2@long: .*steps 110 must be a multiple of selection.every 25"):
        load_plan(p)


def test_ctrl_c_stops_the_whole_job():
    # papermill turns SIGINT into "Aborted!" and exit 1; without the trap the script went on to the next run or report
    import signal
    import time
    # App. L.1's report times training steps: it runs long enough (tens of seconds) to be interrupted mid-notebook
    p = subprocess.Popen(["bash", "reproduce.sh", "--profile", "smoke", "--only", "appL1_overhead"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # a terminal's default: a shell started from a background job inherits SIGINT ignored, and a
                         # non-interactive bash cannot trap a signal ignored on entry (CI may run us that way)
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 600
    for line in p.stdout:  # the first run or report notebook has started
        if line.startswith("[reproduce] run 1/") or line.startswith("[reproduce] report"):
            break
        assert time.time() < deadline
    time.sleep(3)
    assert p.poll() is None, "reproduce.sh finished before it could be interrupted"
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground process group
    out, err = p.communicate(timeout=300)
    assert p.returncode == 130, (p.returncode, out[-2000:], err[-2000:])
    assert "interrupted: finished runs are kept" in err
    assert "summary" not in out  # it stopped; it did not go on to the end


def test_learning_curve_starts_at_the_warm_start_and_runs_log_to_tensorboard(tmp_path, monkeypatch):
    plan, rid = _one_run(tmp_path, monkeypatch, "DAPO", steps=4, every=2)
    out = train_run(plan, rid, tmp_path / "runs" / "runs")
    meta = json.loads((out / "DONE").read_text())
    assert [h["step"] for h in meta["selection"]] == [0, 2, 4]  # the warm start is the curve's first point
    assert meta["selected_step"] in (2, 4)  # ... but never the selected checkpoint
    # what it started from: the cached warm start's folder and the sha256 of its weights, as on disk
    import hashlib
    prov = meta["provenance"]
    start = tmp_path / "cache" / prov["start"]
    assert prov["start"].startswith("tiny-qwen3-math-") and start.is_dir()
    assert prov["start_sha256"] == hashlib.sha256((start / "model.safetensors").read_bytes()).hexdigest()
    assert prov["cpu_capability"] and prov["torch"] == torch.__version__
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else None
    assert prov["cpu_bf16"] == (None if flags is None else [f for f in ("amx_bf16", "avx512_bf16") if f in flags.split()])
    events = list((tmp_path / "runs" / "tensorboard" / rid).glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0  # TRL's report_to: live curves under runs/<profile>/tensorboard


def test_a_resumed_run_s_learning_curve_has_each_step_once(tmp_path, monkeypatch):
    # interrupted after step 3 was evaluated but before its checkpoint (every 2 steps): the resumed run evaluates step 3
    # again, on the trajectory it goes on with; the curve keeps that one (it kept both before, and the readers
    # counted the run twice at that step)
    plan, rid = _one_run(tmp_path, monkeypatch, "DAPO", steps=4, every=1)
    from transformers import TrainerCallback
    import delta_repro.experiments as ex

    class Crash(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):  # step 4 begins: step 3 was evaluated, not saved
            if state.global_step == 3: raise KeyboardInterrupt("after step 3's evaluation, before a checkpoint")

    real_add = ex.DeltaGRPOTrainer.add_callback
    monkeypatch.setattr(ex.DeltaGRPOTrainer, "add_callback", lambda self, cb: (real_add(self, cb), real_add(self, Crash())))
    with pytest.raises(KeyboardInterrupt):
        train_run(plan, rid, tmp_path / "runs", save_every=2)
    out = tmp_path / "runs" / rid
    left = json.loads((out / "selection.json").read_text())["history"]
    assert [h["step"] for h in left] == [0, 1, 2, 3] and (out / "trainer" / "checkpoint-2").exists()
    monkeypatch.setattr(ex.DeltaGRPOTrainer, "add_callback", real_add)
    train_run(plan, rid, tmp_path / "runs", save_every=2)
    meta = json.loads((out / "DONE").read_text())
    assert meta["resumed_from_step"] == 2 and [h["step"] for h in meta["selection"]] == [0, 1, 2, 3, 4]
    # the reader keeps a step's last evaluation for runs recorded before the fix (two such runs are archived)
    meta["selection"] = left + meta["selection"][3:]
    (out / "DONE").write_text(json.dumps(meta))
    assert learning_curve(out)["step"].tolist() == [0, 1, 2, 3, 4]
    assert learning_curve(out)["accuracy"].tolist() == [h["accuracy"] for h in meta["selection"][:3] + meta["selection"][4:]]


def test_a_resumed_selection_forgets_the_abandoned_trajectory_and_says_so_about_its_choice(tmp_path):
    from types import SimpleNamespace
    from delta_repro.experiments import SelectionCallback
    cb = SelectionCallback(None, None, tmp_path / "best", every=25, k=1, max_new_tokens=4, seed=0)
    cb.history = [{"step": 0, "accuracy": 50.0}, {"step": 25, "accuracy": 60.0}, {"step": 50, "accuracy": 70.0}]
    with pytest.warns(UserWarning, match="resumed at step 48: .* holds step 50 of the trajectory left behind"):
        cb.on_train_begin(None, SimpleNamespace(global_step=48), None)
    assert cb.history == [{"step": 0, "accuracy": 50.0}, {"step": 25, "accuracy": 60.0}] and cb.best["step"] == 25
    cb.choose = "last"
    cb.history.append({"step": 50, "accuracy": 40.0})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its choice is not among the forgotten steps: nothing to say
        cb.on_train_begin(None, SimpleNamespace(global_step=50), None)
    assert [h["step"] for h in cb.history] == [0, 25, 50]


@pytest.mark.parametrize("args, msg", [(["--lr", "2"], "--lr"), (["--steps", "0"], "--steps"),
                                       (["--warm-start-steps", "0"], "--warm-start-steps"), (["--backbone", "gpt"], "--backbone"),
                                       (["--select-every", "0"], "--select-every"),
                                       (["--agreement", "docs", "configs"], "--agreement")])
def test_calibration_script_refuses_bad_arguments(args, msg):
    import sys
    res = subprocess.run([sys.executable, "scripts/calibrate.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and msg in res.stderr, res.stderr[-500:]


def test_checkpoint_selection_samples_the_weights_being_trained(monkeypatch, tmp_path):
    # with vLLM installed, engine="auto" would build an engine from model.name_or_path: the starting checkpoint
    import delta_repro.evaluation as ev
    from delta_repro.experiments import SelectionCallback
    seen = {}
    def fake_evaluate(model, tok, benchmarks, **kw):
        seen.update(kw)
        return pd.DataFrame({"benchmark": ["select"], "problem_id": ["p"], "sample": [0], "correct": [True],
                             "parseable": [True], "length": [1], "completion": ["x"]})
    monkeypatch.setattr(ev, "evaluate", fake_evaluate)
    cb = SelectionCallback(None, None, tmp_path / "best", every=1, k=1, max_new_tokens=4, seed=0)
    assert cb._accuracy(object()) == 100.0 and seen["engine"] == "transformers"


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu1", "paper"])
def test_every_profile_has_disjoint_sets(profile):
    from delta_repro.experiments import FIXTURE_FILES, plan_overlap
    plan = load_plan(ROOT / "configs" / f"{profile}.yaml")
    t = plan_overlap(plan, fixtures={k: ROOT / "tests" / "fixtures" / v for k, v in FIXTURE_FILES.items()})
    assert not t["note"].str.startswith("not built").any(), t
    compared = t.dropna(subset=["overlap"])
    assert len(compared) and compared["overlap"].sum() == 0, compared[compared["overlap"] > 0]
    if profile in ("smoke", "cpu"):  # generated sets: every pair compared, with their full sizes
        assert compared["problems"].min() >= 4 and len(compared) == len(t)


def test_a_selection_set_is_never_a_reported_one(tmp_path, monkeypatch):
    from delta_repro.experiments import check_selection, plan_overlap
    from delta_repro.reporting import report_benchmarks
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path / "cache"))
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    assert report_benchmarks(load_plan(ROOT / "configs" / "smoke.yaml"), "code") == ["code-heldout"]
    code = raw["tasks"]["code"]
    bad = {**raw, "tasks": {**raw["tasks"], "code": {**code, "select": "code-heldout",
                                                     "eval": {"code-heldout": code["eval"]["code-heldout"]}}}}
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(bad, allow_unicode=True))
    with pytest.raises(ValueError, match=r"task code: its selection set 'code-heldout' is its only eval set"):
        load_plan(p)
    plan = load_plan(ROOT / "configs" / "smoke.yaml")  # a plan changed after loading is refused where it is used
    plan.raw["tasks"]["code"] = bad["tasks"]["code"]
    for call in (lambda: check_selection(plan.raw), lambda: plan_overlap(plan, tasks=["code"]),
                 lambda: train_run(plan, plan.artefact_runs["table1_main"][0], tmp_path / "runs"),
                 lambda: report_benchmarks(plan, "code")):
        with pytest.raises(ValueError, match="code-heldout"):
            call()
    plan.raw["tasks"]["code"] = {**code, "ood": {"code-select": code["eval"]["code-select"]}}
    with pytest.raises(ValueError, match=r"selection set 'code-select' is also its out-of-domain set"):
        check_selection(plan.raw)
    assert not (tmp_path / "cache").exists()


def test_train_run_refuses_a_plan_whose_sets_overlap(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path / "cache"))
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    # a held-out set drawn from the training split, as a plan might by mistake
    raw["tasks"]["math"]["eval"]["chain_sum-heldout"] = {**raw["tasks"]["math"]["train"], "size": 8, "split": "train"}
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(raw, allow_unicode=True))
    plan = load_plan(p)
    rid = plan.artefact_runs["table1_main"][0]
    with pytest.raises(ValueError, match=r"chain_sum-heldout: 8 of 8 problems occur in train"):
        train_run(plan, rid, tmp_path / "runs")
    assert not (tmp_path / "runs" / rid / "DONE").exists() and not (tmp_path / "cache").exists()  # refused before any work


def test_help_prints_the_comment_block_and_no_line_of_code():
    import subprocess
    out = subprocess.run(["bash", "reproduce.sh", "--help"], capture_output=True, text=True, timeout=60).stdout
    lines = out.splitlines()
    assert len(lines) > 10 and all(l.startswith("#") for l in lines), [l for l in lines if not l.startswith("#")]
    assert "--reports-only" in out and "--only" in out
