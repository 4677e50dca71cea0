"""Shared fixtures: a tiny tokenizer, task and trainer factory (CPU, seconds).

`DELTA_REPRO_TEST_DEVICE=cuda pytest tests/test_trainer.py` runs the trainers built by `make_trainer` on the GPU
(float32), the way the device check in benchmarks/gpu_checks.sh does; CI runs everything on CPU."""
import itertools
import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from datasets import Dataset

sys.path.insert(0, str(Path(__file__).parent))  # tests/reference.py

from delta_repro.models import tiny_causal_lm, train_bpe_tokenizer  # noqa: E402
from delta_repro.trainer import DeltaGRPOConfig, DeltaGRPOTrainer  # noqa: E402

PAIRS = [(a, b) for a in range(10) for b in range(10)]


def free_port() -> int:
    "A TCP port free on this host now, for the rendezvous of a test's `accelerate launch`."
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def script(name: str):
    "scripts/<name>.py loaded as a module (scripts/ is not a package), for the tests that call its functions."
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """(sdist, wheel): the sdist and the wheel built from it, `twine check --strict` passed (scripts/check_wheel.py);
    built once for tests/test_packaging.py and tests/test_verl.py."""
    return script("check_wheel").build(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def tok():
    return train_bpe_tokenizer([f"{a} + {b} = {a + b}" for a, b in PAIRS], vocab_size=300)


@pytest.fixture(scope="session")
def toy_ds():
    return Dataset.from_list([{"prompt": f"{a} + {b} =", "answer": str(a + b)} for a, b in PAIRS])


def prefix_reward(completions, answer, **kw):
    "How many leading characters of the answer the completion gets right: varied enough for non-zero advantages."
    return [float(sum(1 for _ in itertools.takewhile(lambda p: p[0] == p[1], zip(c.strip(), a)))) +
            0.1 * (len(c) % 3) for c, a in zip(completions, answer)]


# the code-data lint caches its verdicts: the suite's go to a directory of its own, not the user's cache
os.environ.setdefault("DELTA_REPRO_LINT_CACHE", tempfile.mkdtemp(prefix="delta_repro_lint_"))

DEVICE = os.environ.get("DELTA_REPRO_TEST_DEVICE", "cpu")
BASE = dict(per_device_train_batch_size=8, num_generations=4, max_completion_length=6, max_steps=2, logging_steps=1,
            report_to="none", use_cpu=DEVICE == "cpu", learning_rate=1e-3, save_strategy="no", steps_per_generation=2, seed=0,
            loss_type="dapo", epsilon_high=0.28, delta=10.0, beta=0.0, disable_tqdm=True, bf16=False)  # TRL defaults to bf16 autocast, CPU too


@pytest.fixture
def make_trainer(tok, toy_ds, tmp_path):
    def make(reward=prefix_reward, model=None, tokenizer=None, **kw):
        args = DeltaGRPOConfig(output_dir=str(tmp_path / "out"), **{**BASE, **kw})
        tk = tokenizer or tok
        torch.manual_seed(0)
        return DeltaGRPOTrainer(model=model or tiny_causal_lm(tk, "qwen3", hidden_size=32), reward_funcs=reward,
                                args=args, train_dataset=toy_ds, processing_class=tk)
    return make
