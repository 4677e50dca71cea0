"""The README's TRL example, run as written with whatever `delta_repro` Python imports, made short: `steps` training
steps (2 in the tests), no reports, no checkpoints, no progress bar; nothing else is changed or injected.

tests/test_readme.py runs it in-process on the clone; scripts/check_wheel.py (CI, through tests/test_packaging.py, and
the release workflow) copies this file and the README into a
folder outside the clone and runs it there with a fresh virtual environment's Python, into which only the built
wheel (and its dependencies) was installed, with an empty DELTA_REPRO_CACHE:

    python -I readme_example.py README.md [STEPS] [--vllm]

`--vllm` (scripts/first_hour.sh, on a GPU with vLLM installed) adds TRL's colocated vLLM rollouts
(`use_vllm=True, vllm_mode="colocate"`, a third of the GPU's memory for vLLM) and nothing else. It prints one JSON line: where delta_repro was imported from, its version, the steps run, and the logged rewards and
mean λ. Exits non-zero (the example's own traceback) when the example fails."""
import dataclasses
import json
import re
import sys
from pathlib import Path


# TRL's colocated vLLM rollouts (the gpu1 and paper profiles' engine), sized so that the policy and its optimizer keep
# two thirds of the GPU.
VLLM = {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}


def example(readme: str) -> str:
    "The README's one python block that builds a `DeltaGRPOTrainer`. Raises `ValueError` when there is not exactly one."
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "DeltaGRPOTrainer(" in b]
    if len(blocks) != 1:
        raise ValueError(f"readme: expected one python block that builds a DeltaGRPOTrainer, found {len(blocks)}")
    return blocks[0]


def run(readme: str, steps: int = 2, overrides: dict | None = None) -> dict:
    """Execute the README's example (`example(readme)`) with `DeltaGRPOConfig` made `steps` steps long and quiet, and
    with `overrides` (config field -> value, e.g. `VLLM`) set on top of the example's own arguments; returns the
    example's namespace (its `trainer`, `args`, `model`, ...). The current directory receives `out/`.
    Raises `ValueError` for a `steps` that is not a positive int or an override that is not a config field."""
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    overrides = dict(overrides or {})
    import delta_repro.trainer as trainer_mod

    code = example(readme)
    original = trainer_mod.DeltaGRPOConfig

    class Short(original):
        def __post_init__(self):
            self.max_steps, self.report_to = steps, "none"
            self.save_strategy, self.disable_tqdm = "no", True
            for key, value in overrides.items():
                setattr(self, key, value)
            super().__post_init__()

    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(original)})
    if unknown:
        raise ValueError(f"overrides: not fields of DeltaGRPOConfig: {unknown}")
    trainer_mod.DeltaGRPOConfig = Short  # the example imports it by name from delta_repro.trainer
    try:
        ns = {}
        exec(compile(code, "README.md", "exec"), ns)
    finally:
        trainer_mod.DeltaGRPOConfig = original
    return ns


if __name__ == "__main__":
    import delta_repro

    args = [a for a in sys.argv[1:] if a != "--vllm"]
    readme_path, steps = args[0], int(args[1]) if len(args) > 1 else 2
    ns = run(Path(readme_path).read_text(encoding="utf-8"), steps, VLLM if "--vllm" in sys.argv else None)
    logs = ns["trainer"].state.log_history
    print(json.dumps({"delta_repro": delta_repro.__file__, "version": delta_repro.__version__,
                      "steps": ns["trainer"].state.global_step,
                      "reward": [l["reward"] for l in logs if "reward" in l],
                      "lam_mean": [l["delta/lam_mean"] for l in logs if "delta/lam_mean" in l]}))
