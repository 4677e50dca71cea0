"""Set-up and packaging: the pins agree everywhere, and `pip install delta_repro` gets a complete wheel: every module
the package imports is a declared dependency, the sdist and the wheel built from it pass `twine check`, and the
README's example runs from the wheel installed in a fresh environment outside the clone with an empty cache
(scripts/check_wheel.py, the release workflow's steps)."""
import ast
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
from conftest import script  # noqa: E402

check_wheel = script("check_wheel")
WARM_START = "tiny-qwen3-math-94b3bc1fee6e521c"  # delta_repro.proxies.WARM_START, read from the wheel's code below
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


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
    project = PROJECT
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
    nbdev = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["nbdev"]
    assert nbdev["lib_path"] == "delta_repro" and "tags" in nbdev["allowed_cell_metadata_keys"]
    assert not (ROOT / "settings.ini").exists()


# What the package imports without being a dependency of the wheel, and why.
NOT_DEPENDENCIES = {
    "verl": "delta_repro.verl is verl's plugin: it is imported inside verl's own environment only (docs/scale.md)",
    "tensordict": "verl's own dependency, imported by delta_repro.verl only",
}


def imported_distributions(package: Path = ROOT / "delta_repro") -> dict[str, set[str]]:
    """Every distribution the modules of `package` import (at the top or inside a function), by normalised name,
    with the modules that import it; a module no installed distribution provides counts under its own name."""
    provides = importlib.metadata.packages_distributions()
    found = {}
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for top in {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"delta_repro"}:
                for dist in provides.get(top, [top]):
                    found.setdefault(norm(dist), set()).add(path.stem)
    return found


def undeclared(imported: dict[str, set[str]], project: dict = PROJECT) -> list[str]:
    "The imported distributions that are neither a dependency nor an extra of `project` nor in NOT_DEPENDENCIES."
    declared = {norm(Requirement(d).name) for d in project["dependencies"]}
    declared |= {norm(Requirement(d).name) for ds in project["optional-dependencies"].values() for d in ds}
    return sorted(f"{dist} (imported by {', '.join(sorted(mods))})" for dist, mods in imported.items()
                  if dist not in declared and dist not in NOT_DEPENDENCIES)


def test_every_module_the_package_imports_is_declared():
    imported = imported_distributions()
    assert {"torch", "trl", "math-verify", "reasoning-gym", "vllm", "verl"} <= set(imported)  # the scan sees them
    assert undeclared(imported) == []
    # the check fails when a dependency is dropped (the wheel of main at ad5577a lacked these two)
    lacking = dict(PROJECT, dependencies=[d for d in PROJECT["dependencies"]
                                          if not d.startswith(("math-verify", "reasoning-gym"))])
    assert [u.split()[0] for u in undeclared(imported, lacking)] == ["math-verify", "reasoning-gym"]


@pytest.fixture(scope="module")
def wheel(dist):
    return dist[1]


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
    for dep in ("math-verify", "reasoning-gym", "scipy"):  # what the README's example and the API import
        assert any(norm(Requirement(r).name) == dep for r in requires), dep


def test_sdist_and_wheel_carry_the_readme_warm_start(dist):
    """The policy the README's example starts from (about 4 MB) ships inside the package, as the same bytes as the
    clone's figures/cpu/warm_starts/ archive, in the sdist (a file, not a link) and in the wheel built from it."""
    sdist, wheel = dist
    committed = (ROOT / "figures" / "cpu" / "warm_starts" / f"{WARM_START}.tar.gz").read_bytes()
    rel = f"delta_repro/data/warm_starts/{WARM_START}.tar.gz"
    with tarfile.open(sdist) as t:
        (member,) = [m for m in t.getmembers() if m.name.endswith("/" + rel)]
        assert member.isfile() and t.extractfile(member).read() == committed
    with zipfile.ZipFile(wheel) as z:
        assert z.read(rel) == committed
        assert f'WARM_START = "{WARM_START}"' in z.read("delta_repro/proxies.py").decode()
        assert [n for n in z.namelist() if n.endswith(".tar.gz")] == [rel]  # only that one: 4 MB, not 12
    assert 3e6 < wheel.stat().st_size < 6e6


@pytest.fixture(scope="module")
def user_python(wheel, tmp_path_factory):
    "The Python of a fresh environment holding the pinned torch and the wheel with its dependencies, nothing else."
    return check_wheel.make_venv(tmp_path_factory.mktemp("user") / "venv", wheel)


def test_readme_example_runs_from_the_installed_wheel_outside_the_clone(user_python):
    summary = check_wheel.run_example(user_python)  # an empty DELTA_REPRO_CACHE, `python -I`, a folder outside ROOT
    assert not Path(summary["delta_repro"]).is_relative_to(ROOT) and "site-packages" in summary["delta_repro"]
    assert summary["steps"] == 2 and summary["lam_mean"] and summary["reward"][0] > 0
    # every module but verl's plugin imports with the declared dependencies alone
    mods = [p.stem for p in (ROOT / "delta_repro").glob("*.py") if p.stem not in ("verl", "__init__", "__main__")]
    code = "import importlib; [importlib.import_module('delta_repro.' + m) for m in %r]" % sorted(mods)
    check_wheel._run([user_python, "-I", "-c", code], cwd=user_python.parent, env=check_wheel.user_env())


def test_a_wheel_without_the_warm_start_fails_the_check(wheel, user_python, tmp_path):
    stripped = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(stripped, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if "warm_starts/" not in item.filename:
                data = src.read(item)
                if item.filename.endswith("RECORD"):
                    data = b"".join(l for l in data.splitlines(True) if b"warm_starts/" not in l)
                dst.writestr(item, data)
    pip = [user_python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall"]
    check_wheel._run([*pip, stripped], env=check_wheel.user_env())
    try:
        with pytest.raises(subprocess.CalledProcessError) as e:
            check_wheel.run_example(user_python)
        last = e.value.stderr.strip().splitlines()[-1]
        assert last.startswith("FileNotFoundError") and "pip install --force-reinstall --no-deps delta_repro" in last
        assert "site-packages" not in last
    finally:
        check_wheel._run([*pip, wheel], env=check_wheel.user_env())


def test_the_installed_package_says_where_things_are(user_python, dist):
    """`python -m delta_repro` and `delta-repro` in the wheel's environment: the version, the shipped warm start, and
    for the notebooks, profiles and docs the source distribution, which holds them."""
    outs = [check_wheel._run(cmd, cwd=user_python.parent, env=check_wheel.user_env())
            for cmd in ([user_python, "-I", "-m", "delta_repro"], [user_python.parent / "delta-repro"])]
    assert outs[0] == outs[1]
    info = dict(line.split(": ", 1) for line in outs[0].splitlines())
    version = re.search(r'__version__ = "([^"]+)"', (ROOT / "delta_repro" / "__init__.py").read_text())[1]
    assert info["version"] == version and info["warm_starts"] == WARM_START
    assert "site-packages" in info["package"]
    assert info["next"].startswith("`python -m delta_repro demo` trains DelTA beside DAPO")  # what to do next
    with tarfile.open(dist[0]) as t:
        names = t.getnames()
    for key, folder, example in (("notebooks", "nbs", "00_proxies.ipynb"), ("profiles", "configs", "cpu.yaml"),
                                 ("docs", "docs", "scale.md")):
        assert info[key].startswith(f"{folder}/ of the source distribution delta_repro-{version}.tar.gz"), info[key]
        assert f"delta_repro-{version}/{folder}/{example}" in names


def test_the_release_workflow_runs_the_ci_check_and_publishes_on_tags_by_trusted_publishing():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    on = wf[True]  # YAML 1.1 reads the key `on` as True
    assert on["push"]["tags"] == ["v*"] and "workflow_dispatch" in on
    check, publish = wf["jobs"]["check"], wf["jobs"]["publish"]
    runs = [s["run"] for s in check["steps"] if "run" in s]
    assert any(r.startswith("python scripts/check_wheel.py ") for r in runs)  # what tests/test_packaging.py runs
    # the build tools at the versions CI uses, requirements.txt's: run the step's own selection of them
    (select,) = re.findall(r"\$\((.*)\)", next(r for r in runs if "pip install" in r))
    chosen = subprocess.run(["bash", "-c", select], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    req = requirements()
    assert sorted(chosen.split()) == sorted(f"{t}=={req[t]}" for t in ("build", "twine", "setuptools"))
    assert publish["needs"] == "check" and publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert publish["permissions"] == {"id-token": "write"} and wf["permissions"] == {"contents": "read"}
    (pub,) = [s for s in publish["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish")]
    assert "with" not in pub or not {"password", "user"} & set(pub["with"])  # no token: trusted publishing


def test_the_index_page_of_the_wheel_has_no_relative_link_or_image(dist):
    "The long description (PYPI.md) reads on a package index: no link or image that only resolves inside the clone."
    sdist, wheel = dist
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
    body = meta.split("\n\n", 1)[1]
    assert "Content-Type: text/markdown" in meta.split("\n\n", 1)[0] and "DeltaGRPOTrainer" in body
    assert not re.findall(r"\]\((?![a-z]+://)[^)]*\)", body) and "![" not in body, "relative link or image"
    with tarfile.open(sdist) as t:  # what the description sends a reader to is in the source distribution
        names = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    assert {"README.md", "docs/own_model.md", "docs/glossary.md", "PYPI.md"} <= names
