"""The README's library example runs as written (on a tiny model, shortened by the test, not by editing it)."""
import re
from pathlib import Path

import delta_repro.trainer as trainer_mod
from conftest import PAIRS
from delta_repro.models import tiny_causal_lm
from datasets import Dataset

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_trainer_example_runs(tok, monkeypatch, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    (example,) = [b for b in blocks if "DeltaGRPOTrainer(" in b]
    # keep the example's own settings; only make it short and CPU-friendly
    class Short(trainer_mod.DeltaGRPOConfig):
        def __post_init__(self):
            self.max_steps, self.max_completion_length, self.report_to = 2, 6, "none"
            self.use_cpu, self.bf16, self.save_strategy, self.disable_tqdm = True, False, "no", True
            super().__post_init__()
    monkeypatch.setattr(trainer_mod, "DeltaGRPOConfig", Short)
    monkeypatch.chdir(tmp_path)
    ns = {"model": tiny_causal_lm(tok, hidden_size=32), "tokenizer": tok,
          "dataset": Dataset.from_list([{"prompt": f"{a} + {b} =", "answer": str(a + b)} for a, b in PAIRS[:32]])}
    exec(compile(example, "README.md", "exec"), ns)
    logs = ns["trainer"].state.log_history
    assert any("delta/lam_mean" in l for l in logs) and ns["args"].credit_assignment == "delta"
