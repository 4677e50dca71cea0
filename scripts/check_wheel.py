"""What `pip install delta_repro` gives a user, checked the way CI (tests/test_packaging.py, run by test.sh) and the
release workflow (.github/workflows/release.yml) check it, with the same three steps:

1. `build`: the sdist and, from it, the wheel (`python -m build --no-isolation`), then `twine check --strict` on both;
2. `venv`: a fresh virtual environment with the pinned torch of requirements.txt, then the wheel, its dependencies
   held to requirements.txt's pins (`-c requirements.txt`: the tested versions, and pip's cache serves them);
3. `example`: the README's TRL example (scripts/readme_example.py, 2 steps) run by that environment's Python in an
   empty folder outside any clone, with an empty DELTA_REPRO_CACHE and isolated mode (`python -I`: no PYTHONPATH,
   no user site, not the script's folder), so that only what the wheel installed can be imported.

    python scripts/check_wheel.py OUT                  # all three; OUT (new) receives dist/ and venv/
    python scripts/check_wheel.py OUT --wheel W.whl    # venv and example only, for a wheel built elsewhere

A step that fails raises `CalledProcessError` (its command's output is printed), so the script exits non-zero: a
wheel that lacks a file the README's example needs fails here, and CI with it."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list, **kw) -> str:
    "Run `cmd`; returns its stdout. Raises `CalledProcessError` (after printing what it said) when it fails."
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if res.returncode:
        print(res.stdout[-6000:], res.stderr[-6000:], sep="\n", file=sys.stderr)
        raise subprocess.CalledProcessError(res.returncode, cmd, res.stdout, res.stderr)
    return res.stdout


def user_env(**extra: str) -> dict:
    """The environment of a command run for the user's side: this one without PYTHON* variables (PYTHONPATH would
    put a clone on the path, and pip would take the clone's metadata for the installed package) and DELTA_*
    variables, plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DELTA_"))}, **extra}


def build(dist: Path, python: str = sys.executable) -> tuple[Path, Path]:
    """The sdist and the wheel built from it, into the empty or new folder `dist`, metadata checked by
    `twine check --strict`; returns (sdist, wheel). `python` needs build, twine and setuptools (requirements.txt)."""
    dist = Path(dist)
    if dist.exists() and any(dist.iterdir()):
        raise ValueError(f"dist: {dist} is not empty; give a new folder")
    _run([python, "-m", "build", "--no-isolation", "--outdir", dist, ROOT])
    (sdist,), (wheel,) = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    _run([python, "-m", "twine", "check", "--strict", sdist, wheel])
    return sdist, wheel


def torch_pin() -> str:
    "requirements.txt's torch requirement, e.g. 'torch==2.13.0' (installed first: else pip may pick a CUDA build)."
    (pin,) = re.findall(r"^torch==\S+", (ROOT / "requirements.txt").read_text(), re.M)
    return pin


def make_venv(venv: Path, wheel: Path) -> Path:
    """A new virtual environment at `venv` (must not exist) with the pinned torch, then `wheel` and its dependencies
    at requirements.txt's versions; returns its Python."""
    venv, wheel = Path(venv), Path(wheel)
    if venv.exists():
        raise ValueError(f"venv: {venv} exists; give a new folder")
    if wheel.suffix != ".whl" or not wheel.is_file():
        raise ValueError(f"wheel: {wheel} is not a wheel file")
    base = getattr(sys, "_base_executable", sys.executable)  # not this environment's packages: a bare Python
    _run([base, "-m", "venv", venv])
    python = venv / "bin" / "python"
    pip = [python, "-m", "pip", "install", "-q", "--no-compile"]  # Python compiles what the example imports, no more
    _run([*pip, torch_pin()], env=user_env())
    _run([*pip, wheel, "-c", ROOT / "requirements.txt"], env=user_env())
    return python


def run_example(python: Path, steps: int = 2) -> dict:
    """The README's example run by `python` (`python -I`) in a new temporary folder outside the clone, with a new
    empty DELTA_REPRO_CACHE; returns scripts/readme_example.py's summary (delta_repro's path and version, steps,
    logged rewards and mean λ). Raises `CalledProcessError` when the example fails, `RuntimeError` when it imported
    delta_repro from anywhere but that environment's site-packages."""
    with tempfile.TemporaryDirectory(prefix="delta_repro_user_") as user:
        user = Path(user)
        if user.resolve().is_relative_to(ROOT):
            raise ValueError(f"the temporary folder {user} lies inside the clone {ROOT}: set TMPDIR elsewhere")
        shutil.copy(ROOT / "scripts" / "readme_example.py", user)
        shutil.copy(ROOT / "README.md", user)
        (user / "cache").mkdir()
        env = user_env(DELTA_REPRO_CACHE=str(user / "cache"))
        out = _run([python, "-I", "readme_example.py", "README.md", str(steps)], cwd=user, env=env)
    summary = json.loads(out.strip().splitlines()[-1])
    site = _run([python, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    if not Path(summary["delta_repro"]).is_relative_to(site):
        raise RuntimeError(f"the example imported delta_repro from {summary['delta_repro']}, not from {site}")
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="a new folder: receives dist/ (sdist, wheel) and venv/")
    p.add_argument("--wheel", type=Path, help="check this wheel instead of building one (skips the build step)")
    a = p.parse_args(argv)
    if a.out.exists():
        p.error(f"out: {a.out} exists; give a new folder")
    wheel = a.wheel
    if wheel is None:
        sdist, wheel = build(a.out / "dist")
        print(f"[check_wheel] built {sdist.name} ({sdist.stat().st_size / 1e6:.1f} MB) and {wheel.name} "
              f"({wheel.stat().st_size / 1e6:.1f} MB); twine check --strict passed", flush=True)
    python = make_venv(a.out / "venv", wheel)
    print(f"[check_wheel] installed {wheel.name} and its dependencies into {a.out / 'venv'}", flush=True)
    summary = run_example(python)
    print(f"[check_wheel] the README example ran outside the clone with an empty cache: {json.dumps(summary)}")


if __name__ == "__main__":
    main()
