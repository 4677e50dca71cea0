"""The benchmark scripts run and measure what they say (tiny sizes; the figures themselves are not asserted)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from delta_repro.experiments import measure_step_overhead

ROOT = Path(__file__).parents[1]


def test_precision_benchmark_isolates_storage_error_from_arithmetic(tmp_path):
    out = tmp_path / "p.json"
    subprocess.run([sys.executable, "benchmarks/precision.py", "--tokens", "2048", "--d", "64", "--device", "cpu",
                    "--json", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
    r = json.loads(out.read_text())
    assert r["tokens"] > 1024 and r["d"] == 64
    # chunks are upcast to float32 before any product: bf16 input and its exact float64 copy give the same λ̄
    assert r["arithmetic"]["max_abs"] == 0.0
    # rounding the proxies to bf16 moves λ̄ a little, but it does move it (the comparison is not vacuous)
    assert 0 < r["storage"]["max_abs"] < 1e-2
    assert r["total"] == r["storage"]


def test_grader_benchmark_reports_linear_extraction_and_the_deadline(tmp_path):
    out = tmp_path / "g.json"
    subprocess.run([sys.executable, "benchmarks/graders.py", "--scale", "0.25", "--timeout", "1", "--repeats", "1",
                    "--batch", "16", "--adversarial-batch", "14", "--collision-n", "5000", "--json", str(out)],
                   cwd=ROOT, check=True, capture_output=True, text=True, timeout=300)
    r = json.loads(out.read_text())
    shapes = {s["shape"]: s for s in r["shapes"]}
    assert {"newlines", "boxed_open", "sympy_blowup"} <= set(shapes)
    assert all(s["two_n"]["grade"] < 1 + 1 for s in r["shapes"])  # every call within timeout_s (plus slack)
    assert shapes["newlines"]["n"]["chars"] == 10_000 and shapes["newlines"]["two_n"]["chars"] == 20_000
    # the junk answers of issue 21 grade wrong; the throughput is measured on the batches asked for
    assert len(r["degenerate"]) >= 5 and all(d["grade"] is False for d in r["degenerate"])
    real, junk = r["throughput"]["realistic"], r["throughput"]["adversarial"]
    assert (real["n"], junk["n"]) == (16, 14) and real["per_second"] > 0 and junk["per_second"] > 0
    assert 0 < real["mean_reward"] < 1 and real["mean_chars"] > 8_000  # a few thousand tokens, some right, some wrong
    assert junk["logged"]["math/rejected_frac"] > 0
    if "hostile" in r.get("sandbox", {}):  # replies built to stall the parent all score 0
        assert r["sandbox"]["hostile"] and all(h["passed"] == 0 and h["stopped"] for h in r["sandbox"]["hostile"])


@pytest.mark.parametrize("script, args, msg", [
    ("precision.py", ["--tokens", "10"], "--tokens"), ("precision.py", ["--tokens", "nan"], "--tokens"),
    ("precision.py", ["--d", "0"], "--d"), ("precision.py", ["--offset", "nan"], "--offset"),
    ("precision.py", ["--device", "nonsense"], "--device"),
    ("precision.py", ["--json", "README.md"], "never overwritten"),  # earlier results are kept
    ("coefficients.py", ["--json", "README.md"], "never overwritten"),
    ("overhead.py", ["--csv", "README.md"], "never overwritten"),
    ("graders.py", ["--json", "README.md"], "never overwritten"), ("graders.py", ["--scale", "0"], "--scale"),
    ("graders.py", ["--timeout", "0"], "--timeout"), ("graders.py", ["--batch", "0"], "--batch")])
def test_benchmark_scripts_refuse_bad_arguments_before_any_work(script, args, msg):
    before = (ROOT / "README.md").read_bytes()
    res = subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 2 and msg in res.stderr, res.stderr
    assert (ROOT / "README.md").read_bytes() == before


@pytest.mark.parametrize("kw, msg", [(dict(sizes=["70b"]), "sizes"), (dict(sizes="tiny"), "sizes"), (dict(sizes=[]), "sizes"),
                                     (dict(rounds=0), "rounds"), (dict(rounds=1.5), "rounds"), (dict(rounds=True), "rounds"),
                                     (dict(batch=6), "batch"), (dict(completion_length=0), "completion_length")])
def test_overhead_measurement_rejects_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        measure_step_overhead(**kw)


def test_every_timed_overhead_round_generates_fresh_rollouts():
    # TRL keeps its rollout buffer across train() calls; in the steps_per_generation=2 mode every other round used to
    # reuse it, so half the timed DelTA steps computed no coefficients and the two methods timed different work
    df = measure_step_overhead(["tiny"], rounds=2, completion_length=4, batch=8, device="cpu")
    assert df["coefficient_steps"].tolist() == [2, 2]
    assert df["coefficient_s"].notna().all()
