"""The README's library example runs as written: the test swaps in a tiny model and 2 steps for speed, nothing else."""
import re
from pathlib import Path

import delta_repro.models as models_mod
import delta_repro.trainer as trainer_mod
from delta_repro.models import tiny_causal_lm

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_trainer_example_runs(tok, monkeypatch, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    (example,) = [b for b in blocks if "DeltaGRPOTrainer(" in b]
    assert "model, tokenizer =" in example and "dataset =" in example  # self-contained: nothing is injected below
    # keep the example's own settings (its CPU/GPU switch included); only make it short
    class Short(trainer_mod.DeltaGRPOConfig):
        def __post_init__(self):
            self.max_steps, self.max_completion_length, self.report_to = 2, 6, "none"
            self.save_strategy, self.disable_tqdm = "no", True
            super().__post_init__()
    monkeypatch.setattr(trainer_mod, "DeltaGRPOConfig", Short)
    monkeypatch.setattr(models_mod, "load_smollm2", lambda: (tiny_causal_lm(tok, hidden_size=32), tok))
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(example, "README.md", "exec"), ns)
    logs = ns["trainer"].state.log_history
    assert any("delta/lam_mean" in l for l in logs) and ns["args"].credit_assignment == "delta"
    assert ns["args"].use_cpu and not ns["args"].bf16  # the example's own switch picked the CPU settings here
