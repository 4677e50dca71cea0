"""Two data-parallel processes (accelerate launch, gloo on CPU): global statistics equal one process's."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import free_port


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("mp") / "report.json"
    worker = Path(__file__).parent / "multiprocess_worker.py"
    # `--multi_gpu` selects accelerate's torchrun launcher; without CUDA the processes form a gloo (MULTI_CPU) group
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29517",
           str(worker), str(out)]
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    return json.loads(out.read_text())


def test_two_processes_global_statistics_equal_one_process(report):
    assert report["world"] == 2
    assert report["max_abs_diff_global"] < 1e-5
    assert report["max_abs_diff_streaming_gram"] < 1e-5
    assert report["max_abs_diff_local_mode"] > 1e-4  # per-process statistics differ: the switch matters


def test_two_processes_global_token_selection(report):
    assert report["selected_fraction"] == pytest.approx(0.5, abs=0.02)


def test_two_process_delta_training_run(report):
    assert len(report["losses"]) == 2 and all(math.isfinite(x) for x in report["losses"])
    assert all(0.7 < x < 1.3 for x in report["lam_mean"])


def test_the_launch_entry_point_trains_and_evaluates_a_warm_started_run(tmp_path):
    # scripts/train_run.py as a multi-GPU job runs it (`accelerate launch`, here two CPU processes over gloo), on a
    # smoke run whose policy is warm-started: a cold cache is refused with the one-process command that fills it
    # (launched, rank 1 used to publish a warm start without weights and both ranks crashed), then the run trains,
    # rank 0 evaluates, and every process leaves its group before it exits (rc 0, no abort at exit)
    root = Path(__file__).parents[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", DELTA_REPRO_CACHE=str(tmp_path / "cache"))
    env.pop("WORLD_SIZE", None)
    rid, runs = "tiny-qwen3__math__DelTA__s0", tmp_path / "runs"
    script = [str(root / "scripts" / "train_run.py"), "--profile", "smoke", "--run-id", rid, "--runs-dir", str(runs)]
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines",
              "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port()),
              *script]
    cold = subprocess.run(launch, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert cold.returncode != 0 and "--warm-start-only" in cold.stderr and not (runs / rid / "DONE").exists()
    one = subprocess.run([sys.executable, *script, "--warm-start-only"], capture_output=True, text=True, timeout=600,
                         env=env, cwd=tmp_path)
    assert one.returncode == 0, one.stderr[-3000:]
    (policy,) = [p for p in (tmp_path / "cache").iterdir() if p.name.startswith("tiny-qwen3-math-")]
    assert str(policy) in one.stdout and (policy / "model.safetensors").exists()
    res = subprocess.run(launch, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert "terminate called" not in res.stderr
    done = json.loads((runs / rid / "DONE").read_text())
    assert done["provenance"]["start"] == policy.name and len(done["provenance"]["start_sha256"]) == 64
    assert (runs / rid / "eval.csv").exists() and (runs / rid / "eval_final.csv").exists()
    assert json.loads((runs / rid / "log_history.json").read_text())[0]["num_tokens"] > 0
