"""Published equals produced (issue 49): `scripts/check_published.sh` passes a tree whose reports came back as
committed, and fails one where a report changed, naming the file. Run here on a small git repository made for the
test, with `--no-remake` (test.sh runs the full check, remaking every cpu report, on CI's clean clone)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "check_published.sh", tmp_path / "scripts")
    (tmp_path / "figures" / "cpu").mkdir(parents=True)
    shutil.copy(ROOT / "figures" / "machine_dependent.txt", tmp_path / "figures")
    (tmp_path / "figures" / "cpu" / "learning.csv").write_text("method,after RL,learns\nDAPO,35.9531,yes\nDelTA,34.9043,yes\n")
    (tmp_path / "figures" / "cpu" / "learning.md").write_text("| DAPO | 35.95 |\n")
    (tmp_path / "figures" / "cpu" / "appL1_overhead.csv").write_text("model,ratio\ntiny,1.05\n")
    os.symlink(ROOT / ".venv", tmp_path / ".venv")
    (tmp_path / ".gitignore").write_text(".venv\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "reports")
    return tmp_path


def _check(repo):
    return subprocess.run(["bash", str(repo / "scripts" / "check_published.sh"), "--no-remake"], capture_output=True, text=True)


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="needs the clone's .venv")
def test_the_check_fails_on_a_changed_report_and_names_it(repo):
    assert _check(repo).returncode == 0  # nothing changed
    csv = repo / "figures" / "cpu" / "learning.csv"
    csv.write_text(csv.read_text().replace("35.9531", "35.9532"))  # the last of 6 digits: another CPU's last bits
    r = _check(repo)
    assert r.returncode == 0 and "differs only below its stated precision" in r.stderr
    (repo / "figures" / "cpu" / "appL1_overhead.csv").write_text("model,ratio\ntiny,1.31\n")  # declared: timings
    assert _check(repo).returncode == 0
    csv.write_text(csv.read_text().replace("35.9532", "36.1"))  # a number a reader sees
    r = _check(repo)
    assert r.returncode == 1 and "figures/cpu/learning.csv" in r.stderr
    _git(repo, "checkout", "-q", "--", "figures/cpu/learning.csv")
    (repo / "figures" / "cpu" / "learning.md").write_text("| DAPO | 35.96 |\n")  # a page, byte for byte
    r = _check(repo)
    assert r.returncode == 1 and "figures/cpu/learning.md" in r.stderr
    _git(repo, "checkout", "-q", "--", "figures/cpu/learning.md")
    (repo / "figures" / "cpu" / "new_table.csv").write_text("a\n1\n")  # a report the commit lacks
    r = _check(repo)
    assert r.returncode == 1 and "figures/cpu/new_table.csv" in r.stderr


def test_the_check_refuses_a_tree_with_changes_of_its_own(repo):
    (repo / "notes.txt").write_text("mine")
    r = subprocess.run(["bash", str(repo / "scripts" / "check_published.sh")], capture_output=True, text=True)
    assert r.returncode == 3 and "notes.txt" in r.stderr


def test_every_published_markdown_table_has_as_many_cells_in_each_row_as_in_its_header():
    # a "|" inside a cell's text (e.g. an absolute value written |x|) splits the cell and shifts every column after it
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    uneven = []
    for f in sorted((root / "figures").glob("*/*.md")):
        rows = [line for line in f.read_text().splitlines() if line.startswith("|")]
        if len({r.count("|") for r in rows}) > 1: uneven.append(f.name)
    assert not uneven, f"tables whose rows split differently: {uneven}"
