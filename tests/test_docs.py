"""The documentation a reader sees without running anything: the library notebooks are committed executed, with
their pictures and printed checks and without errors (`bash scripts/execute_notebooks.sh` regenerates them), every
check in them shows what it checked, and no file of the repository sends the reader to a document that is not in it."""
import base64
import json
import re
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = sorted(ROOT.glob("nbs/*.ipynb"))
REGENERATE = "run `bash scripts/execute_notebooks.sh <notebook>` and commit the notebook"


def code_cells(nb: Path) -> list[dict]:
    return [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]


def png_size(data) -> tuple[int, int]:
    "(width, height) from a base64 PNG's header; ValueError if it is not a PNG."
    raw = base64.b64decode("".join(data) if isinstance(data, list) else data)
    if raw[:8] != b"\x89PNG\r\n\x1a\n" or raw[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", raw[16:24])


def test_library_notebooks_exist():
    assert {nb.name for nb in LIBRARY} >= {"index.ipynb", "00_proxies.ipynb", "01_coefficients.ipynb", "03_trainer.ipynb"}


@pytest.mark.parametrize("nb", LIBRARY, ids=lambda p: p.name)
def test_library_notebook_is_committed_with_outputs_and_without_errors(nb):
    cells = code_cells(nb)
    for i, c in enumerate(cells):
        src = "".join(c["source"])
        outs = c.get("outputs", [])
        where = f"{nb.name}, code cell {i + 1}"
        for o in outs:
            assert o["output_type"] != "error", f"{where} shows an error: {o.get('ename')}: {o.get('evalue')}"
            if o["output_type"] == "stream":
                assert "Traceback (most recent call last)" not in "".join(o["text"]), f"{where} prints a traceback"
            if "image/png" in o.get("data", {}):
                w, h = png_size(o["data"]["image/png"])
                assert w > 0 and h > 0, f"{where}: empty picture"
        if src.lstrip().startswith("#| export"):
            continue  # definitions: they print nothing when run
        # a top-level print or plot always runs, so an executed notebook has its output
        if re.search(r"^print\(", src, re.M):
            assert any(o["output_type"] == "stream" for o in outs), f"{where} prints but has no output: {REGENERATE}"
        if re.search(r"^(\w+(, \w+)* = )?plt\.(subplots|figure|show)\(", src, re.M):
            assert any("image/png" in o.get("data", {}) for o in outs), f"{where} plots but has no picture: {REGENERATE}"
        assert c.get("execution_count") is None and set(c.get("metadata", {})) <= {"tags"}, f"{where}: run nbdev-clean"


CHECK = re.compile(r"^\s*(assert\b|torch\.testing\.assert_close\(|np\.testing\.assert)", re.M)


def unprinted_checks(cells: list[dict]) -> list[int]:
    """Code cells (1-based among code cells) that check something (`assert`, `torch.testing.assert_close`) but show no
    output (printed text, a table or a picture): a reader of the committed notebook would not see what was checked.
    Definitions (`#| export`) and `#| hide` cells are not checks."""
    bad = []
    for i, c in enumerate((c for c in cells if c["cell_type"] == "code"), 1):
        src = "".join(c["source"])
        if re.match(r"\s*#\|\s*(export|exporti|hide)\b", src) or not CHECK.search(src):
            continue
        if not any("".join(o.get("text", "")).strip() or o.get("data") for o in c.get("outputs", [])):
            bad.append(i)
    return bad


@pytest.mark.parametrize("nb", LIBRARY, ids=lambda p: p.name)
def test_every_check_of_a_library_notebook_shows_what_it_checked(nb):
    bad = unprinted_checks(json.loads(nb.read_text())["cells"])
    assert not bad, f"{nb.name}: code cells {bad} check something but print nothing; add a print saying what they checked"


def test_the_check_rule_catches_a_silent_check():
    cell = lambda src, outs=(): {"cell_type": "code", "source": [src], "outputs": list(outs)}
    said = {"output_type": "stream", "name": "stdout", "text": ["checked: 1 + 1 = 2\n"]}
    table = {"output_type": "execute_result", "data": {"text/plain": ["   a\n0  1"]}, "metadata": {}}
    blank = {"output_type": "stream", "name": "stderr", "text": ["\n"]}
    cells = [cell("#| export\ndef f(): assert True"), cell("x = 1\nassert x == 1"), cell("assert 1 + 1 == 2", [said]),
             cell("y = 2"), cell("for i in range(2):\n    torch.testing.assert_close(i, i)", [blank]),
             cell("assert len(df)\ndf", [table])]
    assert unprinted_checks(cells) == [2, 5]


def test_the_notebooks_with_pictures_have_them():
    "The pictures a reader comes for: the toy batch of 01_coefficients, among others."
    pictures = {nb.name: sum("image/png" in o.get("data", {}) for c in code_cells(nb) for o in c.get("outputs", []))
                for nb in LIBRARY}
    assert pictures["01_coefficients.ipynb"] >= 1 and sum(pictures.values()) >= 3, pictures


def _repository_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        files = [ROOT / n for n in names]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but the usual build outputs
        skip = {".git", ".venv", "runs", "_site", "build", "dist", "__pycache__"}
        files = [p for p in ROOT.rglob("*") if not skip & set(p.relative_to(ROOT).parts)]
    return [f for f in files if f.is_file() and f.suffix in {".py", ".ipynb", ".md", ".sh", ".yaml", ".yml", ".toml", ".txt", ".cfg"}]


def test_no_file_refers_to_a_document_outside_the_repository():
    # the method is restated in nbs/index.ipynb; the paper is cited by arXiv id and section
    outside = [re.compile(p) for p in (r"PAPER" r"\.md", r"shared/" r"spec", r"\.\./shared/", r"/work/" r"shared")]
    hits = [f"{f.relative_to(ROOT)}: {m.group(0)}" for f in _repository_files()
            for pat in outside for m in [pat.search(f.read_text(errors="ignore"))] if m]
    assert not hits, hits
