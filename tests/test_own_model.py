"""docs/own_model.md's example (your own model, data and reward) runs as written, made 2 steps long, on the shipped
tiny warm-started policy; its reward reads the answers it is given; every metric its table names is one the trainer
logs (or, for classes/*, logs when asked)."""
import re
from pathlib import Path

from conftest import script

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "own_model.md"
readme_example = script("readme_example")


def test_the_own_model_example_runs_as_written(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    ns = readme_example.run(PAGE.read_text(), steps=2)
    logs = ns["trainer"].state.log_history
    assert ns["trainer"].state.global_step == 2 and ns["args"].credit_assignment == "delta"
    assert ns["exact_answer"](["so \\boxed{7}", [{"role": "assistant", "content": "\\boxed{8}"}]], ["7", "7"]) == [1.0, 0.0]
    logged = {k for entry in logs for k in entry}
    named = set(re.findall(r"`((?:delta|credit)/[\w]+)`", PAGE.read_text()))
    assert named and named <= logged, sorted(named - logged)
    assert any(entry.get("reward", 0) > 0 for entry in logs)  # the warm start answers some: there is a signal
