"""Set-up and packaging: the pins agree everywhere, and `pip install delta_repro` gets a complete wheel."""
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()


def pins(lines):
    out = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", line
        out[norm(req.name)] = spec.version
    return out


def requirements():
    return pins((ROOT / "requirements.txt").read_text().splitlines())


def test_requirements_pin_cpu_torch_with_everything_else():
    req = requirements()
    assert req["torch"] == "2.13.0"
    for name in ("transformers", "trl", "accelerate", "datasets", "math-verify", "nbdev", "papermill"):
        assert name in req, name
    assert req["trl"] == "1.16.0"
    assert "vllm" not in req  # GPU-only: an optional extra


def test_environment_yml_mirrors_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    (pip_section,) = [d for d in deps if isinstance(d, dict)]
    assert pins(pip_section["pip"]) == requirements()


def test_library_dependencies_admit_the_tested_pins():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    req = requirements()
    for dep in project["dependencies"]:
        r = Requirement(dep)
        assert norm(r.name) in req, f"{r.name} is a library dependency but not pinned in requirements.txt"
        assert r.specifier.contains(req[norm(r.name)]), f"{dep} excludes the tested {req[norm(r.name)]}"
    (vllm,) = [Requirement(d) for d in project["optional-dependencies"]["vllm"]]
    assert norm(vllm.name) == "vllm" and vllm.specifier.contains("0.31.0")
    tf = [Requirement(d) for d in project["dependencies"] if d.startswith("transformers")][0]
    assert not tf.specifier.contains("5.18.0"), "vllm 0.31 needs transformers<5.18"


def test_nbdev3_settings_live_in_pyproject():
    import tomllib

    nbdev = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["nbdev"]
    assert nbdev["lib_path"] == "delta_repro" and "tags" in nbdev["allowed_cell_metadata_keys"]
    assert not (ROOT / "settings.ini").exists()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (whl,) = out.glob("delta_repro-*.whl")
    return whl


def test_wheel_contents_and_metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
        shipped_csv = z.read("delta_repro/data/paper_results.csv")
    for mod in ("__init__", "_modidx", "proxies", "coefficients"):
        assert f"delta_repro/{mod}.py" in names, mod
    assert not any(n.startswith(("tests/", "nbs/")) for n in names)
    requires = [l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Requires-Dist:")]
    torch_req = Requirement(next(r for r in requires if r.startswith("torch")))
    assert torch_req.specifier.contains("2.13.0") and not torch_req.specifier.contains("1.13.0")
    assert any(r.startswith("trl==1.16.0") for r in requires)
    assert any("vllm==0.31.0" in r and 'extra == "vllm"' in r for r in requires)
    # the paper's numbers travel with the package
    assert shipped_csv == (ROOT / "delta_repro" / "data" / "paper_results.csv").read_bytes()
    assert shipped_csv.startswith(b"table,backbone,method,benchmark,value")


def test_wheel_imports_on_its_own(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    code = ("import delta_repro, delta_repro.coefficients as c, importlib.resources as r; "
            "assert delta_repro.__file__.startswith(%r); "
            "print(r.files('delta_repro').joinpath('data/paper_results.csv').read_text().count('\\n'))" % str(tmp_path))
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": ""},
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) > 200
