"""DelTA with TRL's colocated vLLM rollouts, on CPU, in the optional vLLM environment (scripts/vllm_env.sh makes
.venv-vllm; DELTA_VLLM_PYTHON may point at another one). Skips, saying so, where that environment is absent.

tests/vllm_worker.py trains 4 steps (two generation batches) with `use_vllm=True, vllm_mode="colocate"` and reports;
its CPU-only workarounds of TRL's weight sync and of vLLM's CPU dtype are described there. Checked here:
- vLLM generates with the trainer's current weights: after a step and TRL's sync, vLLM's log-probs of a fixed
  completion equal the trainer's (eval mode, float32) to 1e-5 (measured: 0), while the step moved them by > 1e-2
  (measured: 0.18); during training TRL's importance-sampling ratio stays within 1e-4 of 1 (measured: 1.4e-6).
- DelTA's proxies use the trainer's probabilities, not vLLM's: they are built from exactly the trainer's old
  log-probs, also in a probe batch where vLLM reports every log-prob 0.25 too low.
- TRL's importance-sampling correction stays on (DelTA does not disable it) and reacts to that probe."""
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = Path(os.environ.get("DELTA_VLLM_PYTHON", ROOT / ".venv-vllm" / "bin" / "python"))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if os.environ.get("DELTA_SKIP_VLLM") == "1":
        pytest.skip("DELTA_SKIP_VLLM=1: the vLLM tests were switched off")
    if not VLLM_PYTHON.exists():
        pytest.skip(f"the optional vLLM environment is absent ({VLLM_PYTHON}): `bash scripts/vllm_env.sh` creates it")
    out = tmp_path_factory.mktemp("vllm") / "report.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    res = subprocess.run([str(VLLM_PYTHON), str(Path(__file__).parent / "vllm_worker.py"), str(out)],
                         capture_output=True, text=True, timeout=1200, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    return json.loads(out.read_text())


def test_delta_trains_with_colocated_vllm_rollouts(report):
    assert report["steps"] == 4 and len(report["losses"]) == 4 and all(map(math.isfinite, report["losses"]))
    assert len(report["lam_mean"]) == 2 and all(0.7 < x < 1.3 for x in report["lam_mean"])
    assert report["vllm_dtype"] == "torch.float32"


def test_vllm_generates_with_the_updated_weights(report):
    assert report["before_vs_trainer"] < 1e-5
    assert report["moved"] > 1e-2  # training changed the fixed completion's log-probs ...
    assert report["after_vllm_vs_trainer"] < 1e-5  # ... and vLLM has exactly the trainer's new weights
    for b in report["batches"][:2]:  # the batch at step 2 was sampled after a sync: the ratio is 1
        assert b["has_is_ratio"] and b["is_ratio_minus_1_max"] < 1e-4


def test_proxies_use_the_trainers_probabilities(report):
    assert all(b["proxies_use_trainer_logps"] for b in report["batches"])
    probe = report["batches"][-1]
    assert probe["proxies_minus_vllm_min"] == pytest.approx(0.25, abs=1e-4)
    assert probe["proxies_minus_vllm_max"] == pytest.approx(0.25, abs=1e-4)


def test_importance_sampling_correction_stays_on(report):
    assert report["is_correction"] and report["is_mode"] == "sequence_mask"  # TRL 1.16's default
    assert all(b["has_is_ratio"] and b["has_vllm_logps"] for b in report["batches"])
    assert len(report["is_ratio_mean"]) == 2  # logged at both training generation batches
    assert report["batches"][-1]["is_ratio_minus_1_max"] > 0.5  # the biased probe batch is masked out
