"""Two data-parallel processes (accelerate launch, gloo on CPU): global statistics equal one process's."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest


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
