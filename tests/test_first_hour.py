"""scripts/first_hour.sh, the checks a user with one GPU runs before the gpu1 profile (README: "On one GPU"), run here
on CPU: every step that can run without a GPU runs, the vLLM step says it is skipped and why, and the summary table
has one row per step with its outcome and wall time. Steps 3 (trainer tests), 5 (smoke profile) and 6 (the gpu1 dry
run) are test.sh's own pytest and smoke profile on CPU and tests/test_gpu1_profile.py's dry run, so they are not run
twice."""
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "first_hour.sh"
from conftest import script  # noqa: E402

readme_example = script("readme_example")


def _run(tmp_path, steps, check=True):
    env = {**os.environ, "STEPS": steps, "FIRST_HOUR_OUT": str(tmp_path), "FIRST_HOUR_NO_ENV": "1",
           "PY": sys.executable, "DELTA_REPRO_CACHE": os.environ.get("DELTA_REPRO_CACHE", str(tmp_path / "cache"))}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=1800, check=check)


@pytest.fixture(scope="module")
def first_hour(tmp_path_factory):
    out = tmp_path_factory.mktemp("first_hour")
    proc = _run(out, "1 2 4", check=False)
    rows = list(csv.DictReader((out / "summary.tsv").open(), delimiter="\t"))
    return proc, out, rows


def test_every_cpu_step_passes_and_the_table_has_a_row_each(first_hour):
    proc, out, rows = first_hour
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [r["step"] for r in rows] == ["1", "2", "4"]
    assert {r["step"]: r["outcome"] for r in rows} == {"1": "ok", "2": "ok", "4": "skipped"}
    assert all(int(r["seconds"]) >= 0 for r in rows)
    assert all(r["peak_gpu_mib"] == "-" for r in rows)  # no GPU here: nothing is made up


def test_the_readme_example_trained_two_steps(first_hour):
    _, out, _ = first_hour
    line = [l for l in (out / "step2.log").read_text().splitlines() if l.startswith("{")][-1]
    summary = json.loads(line)
    # λ is computed once per rollout batch, which the example's steps_per_generation=4 makes one for 2 steps
    assert summary["steps"] == 2 and len(summary["lam_mean"]) >= 1 and summary["reward"]
    assert all(0.8 <= lam <= 1.2 for lam in summary["lam_mean"])


def test_the_vllm_step_says_why_it_is_skipped(first_hour):
    _, out, _ = first_hour
    assert "skipped: no GPU" in (out / "step4.log").read_text()


def test_a_failed_step_fails_the_script_and_shows_in_the_table(tmp_path):
    bad = {**os.environ, "PY": "/bin/false"}  # every python step fails at once
    proc = subprocess.run(["bash", str(SCRIPT)], env={**bad, "STEPS": "1", "FIRST_HOUR_OUT": str(tmp_path),
                          "FIRST_HOUR_NO_ENV": "1"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    rows = list(csv.DictReader((tmp_path / "summary.tsv").open(), delimiter="\t"))
    assert rows[0]["outcome"] == "failed (1)"


def test_bad_steps_are_refused_by_name(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT)], env={**os.environ, "STEPS": "1 seven", "FIRST_HOUR_OUT": str(tmp_path),
                          "FIRST_HOUR_NO_ENV": "1"}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "STEPS must list step numbers 1-6" in proc.stderr


def test_readme_example_refuses_overrides_that_are_not_config_fields():
    with pytest.raises(ValueError, match="not fields of DeltaGRPOConfig: \\['use_vlm'\\]"):
        readme_example.run((ROOT / "README.md").read_text(), 1, {"use_vlm": True})


def test_the_vllm_overrides_are_trl_fields():
    import dataclasses

    from delta_repro.trainer import DeltaGRPOConfig

    assert set(readme_example.VLLM) <= {f.name for f in dataclasses.fields(DeltaGRPOConfig)}


# scripts/env.sh puts vLLM (requirements-gpu.txt) into .venv where nvidia-smi sees a GPU when it creates the
# environment, and keeps that choice in it. Checked without installing anything: a venv whose stamp says "installed
# with (or without) vLLM" is reused exactly when env.sh's choice matches the stamp; a choice that differed would
# reinstall, which the stand-in python below refuses, and the install line would show.
def _stamp(with_vllm: int) -> str:
    import hashlib

    files = ["requirements.txt", "pyproject.toml", "scripts/env.sh", "scripts/lib.sh"] + (["requirements-gpu.txt"] if with_vllm else [])
    data = b"".join((ROOT / f).read_bytes() for f in files) + f"with_vllm={with_vllm}\n".encode()
    return hashlib.sha256(data).hexdigest()


def _source_env(tmp_path, stamp_for: int, gpu: bool, with_vllm: str | None, recorded: str | None = None):
    venv, bin_ = tmp_path / "venv", tmp_path / "fakebin"
    (venv / "bin").mkdir(parents=True)
    bin_.mkdir()
    # a python that refuses pip: a choice that did not match the stamp would install, and fails here instead
    (venv / "bin" / "python").write_text(f'#!/bin/sh\ncase "$*" in *pip*) echo "pip called: $*" >&2; exit 99;; esac\n'
                                         f'exec {sys.executable} "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    (venv / "bin" / "activate").write_text("")
    (venv / ".delta_repro_installed").write_text(_stamp(stamp_for) + "\n")
    if recorded is not None:
        (venv / ".delta_repro_with_vllm").write_text(recorded + "\n")
    if gpu:
        (bin_ / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n")
        (bin_ / "nvidia-smi").chmod(0o755)
    env = {**os.environ, "DELTA_VENV": str(venv), "PATH": f"{bin_}:{os.environ['PATH']}"}
    env.pop("DELTA_WITH_VLLM", None)
    if with_vllm is not None:
        env["DELTA_WITH_VLLM"] = with_vllm
    return subprocess.run(["bash", "-c", f"source {ROOT / 'scripts' / 'env.sh'} && echo sourced"], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stamp_for,gpu,with_vllm,recorded", [
    (1, True, None, "1"),   # made on a GPU machine with vLLM: kept
    (0, True, None, "0"),   # made without: a GPU seen later (or a test's stand-in nvidia-smi) adds nothing
    (0, True, None, None),  # made before the choice was recorded: counts as without
    (1, False, None, "1"),  # the GPU not seen for once: vLLM is not dropped
    (0, True, "0", "1"),    # explicit choices win over the record
    (1, False, "1", None),
])
def test_env_sh_keeps_the_vllm_choice_of_the_environment(tmp_path, stamp_for, gpu, with_vllm, recorded):
    proc = _source_env(tmp_path, stamp_for, gpu, with_vllm, recorded)
    assert proc.returncode == 0 and "sourced" in proc.stdout, proc.stderr[-2000:]
    assert "installing" not in proc.stdout and "pip called" not in proc.stderr, proc.stdout + proc.stderr


def test_env_sh_would_reinstall_when_the_choice_changes(tmp_path):
    # the check above can fail: an explicit choice that differs from the stamp reinstalls (refused here)
    proc = _source_env(tmp_path, 0, False, "1", "0")
    assert "[env] installing vLLM (requirements-gpu.txt)" in proc.stdout and "pip called" in proc.stderr


def test_env_sh_refuses_a_bad_delta_with_vllm(tmp_path):
    proc = _source_env(tmp_path, 0, False, "yes")
    assert proc.returncode != 0 and "DELTA_WITH_VLLM must be 0, 1 or auto, got 'yes'" in proc.stderr


@pytest.mark.parametrize("script, expected", [
    (None, "0"),  # no nvidia-smi on the PATH
    ("exit 9", "0"),  # nvidia-smi that fails (no driver)
    ("echo 'No devices were found'", "0"),
    ("echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'", "1"),
    ("echo 'GPU 0: NVIDIA H100 (UUID: GPU-0)'; echo 'GPU 1: NVIDIA H100 (UUID: GPU-1)'", "2"),
])
def test_the_gpu_count_every_script_reads(tmp_path, script, expected):
    # scripts/lib.sh's delta_gpu_count: what reproduce.sh picks its profile from, env.sh whether .venv gets vLLM and
    # first_hour.sh which checks run; under `set -euo pipefail`, as they source it
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "grep", "cat"):  # a PATH without the machine's own nvidia-smi, if it has one
        (bin_ / tool).symlink_to(shutil.which(tool))
    if script is not None:
        (bin_ / "nvidia-smi").write_text(f"#!/bin/sh\n{script}\n")
        (bin_ / "nvidia-smi").chmod(0o755)
    proc = subprocess.run([str(bin_ / "bash"), "-c", f"set -euo pipefail; source {ROOT / 'scripts' / 'lib.sh'}; "
                           "n=$(delta_gpu_count); echo \"n=$n\""], env={"PATH": str(bin_)}, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0 and proc.stdout.strip() == f"n={expected}", proc.stdout + proc.stderr


def test_the_vllm_constraints_leave_out_numpy_and_setuptools_only():
    proc = subprocess.run(["bash", "-c", f"source {ROOT / 'scripts' / 'lib.sh'}; delta_vllm_constraints {ROOT}"],
                          capture_output=True, text=True, timeout=30, check=True)
    req = [l for l in (ROOT / "requirements.txt").read_text().splitlines()]
    left_out = [l for l in req if l not in proc.stdout.splitlines()]
    assert {l.split("==")[0] for l in left_out if "==" in l} == {"numpy", "setuptools"}
    assert "torch==" in proc.stdout and "trl==" in proc.stdout
