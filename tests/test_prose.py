"""Prose read against the files it cites (issue 38): every number in the README's result section and in
`docs/status.md`'s evidence section must equal, at the precision it is printed with, a number of a file cited in the
same paragraph or list item (a `figures/...`, `configs/...` or `benchmarks/...` path in backticks or a link; a `.md`
table is read through the `.csv` beside it), so that a stale or hand-edited number fails the suite. Numbers that name
things rather than measure them (Table 9, issue 37, avg@4, a method such as Top-50%, a date, the 95 of "95 % CI")
are not read. A number is found in the rows of a cited table that the passage names (by claim, method or artefact),
in any column, so a number moved to another column of a named row passes here: the README's headline is also checked
cell by cell (`tests/test_readme.py`).
The checker runs on passages made to fail, so it can fail."""
import csv
import json
import re
from pathlib import Path

import pytest

from delta_repro.trainer import METHODS

ROOT = Path(__file__).resolve().parents[1]
CITED = re.compile(r"(?:`|\]\()((?:figures|configs|benchmarks)/[^`)\s]+?)(?:`|\))")
# numbers that name things, not measurements: read before any number is
NAMES = [r"\d{4}-\d{2}-\d{2}", r"\b\d+-(?:step|term|digit|point|process|token)s?\b", r"\b(?:Tables?|Fig\.|Figs\.|App\.|Sec\.|Eq\.|issues?|steps?) [A-Z]?\d+(?:\.\d+)?(?:[–-]\d+)?(?:(?:,| and) \d+(?:[–-]\d+)?)*",
         r"\b(?:avg|pass)@\d+", r"\b9[05] % (?:CI|interval|confidence)", r"\b80 % power", r"(?:α|alpha) ?=? ?0\.05",
         r"\b\d+[–-]\d+ terms?", r"\b[A-Za-z][\w.-]*\d[\w.-]*", r"\bλ ?∈ ?\[[^\]]*\]", r"\b1e-\d+", r"\b\d+e-\d+"]
NUMBER = re.compile(r"(?<![\w.])[+−-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.]\d)|(?<![\w.])[+−-]?\d+(?:\.\d+)?(?![\w]|\.\d)")


def _numbers_of(path: Path, unit: str = "") -> list[float]:
    """Every number a cited file holds: csv cells, json/jsonl leaves, else the numbers of its text. Of a csv, only the
    rows whose key (its `claim`, `method` or `artefact` column, else its first) the passage names, when it names any:
    a number must come from the row the sentence is about, not from anywhere in the table."""
    if path.suffix == ".md" and path.with_suffix(".csv").exists():
        path = path.with_suffix(".csv")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if rows:
            key = next((k for k in ("claim", "method", "artefact") if k in rows[0]), next(iter(rows[0])))
            named = [r for r in rows if r[key] and _names(unit, r[key])]
            return [x for r in (named or rows) for cell in r.values() if cell for x in _floats(cell)]
    out = []
    def leaves(x):
        if isinstance(x, bool): return
        if isinstance(x, (int, float)): out.append(float(x))
        elif isinstance(x, dict): [leaves(v) for v in x.values()]
        elif isinstance(x, list): [leaves(v) for v in x]
        elif isinstance(x, str): out.extend(_floats(x))
    if path.suffix == ".csv":
        for row in csv.reader(text.splitlines()):
            for cell in row: out.extend(_floats(cell))
    elif path.suffix in (".json", ".jsonl"):
        for line in (text.splitlines() if path.suffix == ".jsonl" else [text]):
            if line.strip(): leaves(json.loads(line))
    else:
        out.extend(_floats(text))
    return out


def _names(unit: str, key: str) -> bool:
    "Whether a passage names a row key as a whole phrase (DAPO is not named by 'DAPO w/ Forking Tokens')."
    return re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-]| w/)", unit, re.I) is not None


def _floats(s: str) -> list[float]:
    vals = []
    for m in re.findall(r"[+−-]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?", s):
        try: vals.append(float(m.replace("−", "-").replace(",", "")))
        except ValueError: pass
    return vals


def _matches(stated: str, pool: list[float], percent: bool) -> bool:
    "A number as printed equals a value of `pool` rounded to its decimals (a percentage also a share ×100)."
    s = stated.replace("−", "-").replace(",", "")
    decimals = len(s.split(".")[1]) if "." in s else 0
    v, tol = float(s), 0.5 * 10 ** -decimals + 1e-9
    cands = pool + ([x * 100 for x in pool] if percent else [])
    return any(abs(abs(x) - abs(v)) <= tol and (abs(v) < tol or x * v >= 0 or s[0] not in "+-") for x in cands)


def units(text: str) -> list[str]:
    "The paragraphs and list items of a Markdown passage (a nested item is its own unit), each on one line."
    out, cur = [], []
    for line in text.splitlines():
        if re.match(r"\s*[-*] ", line) or not line.strip():
            if cur: out.append(" ".join(cur))
            cur = [line.strip()[2:]] if line.strip() else []
        else:
            cur.append(line.strip())
    if cur: out.append(" ".join(cur))
    return [u for u in out if u]


def problems(text: str, root: Path = ROOT) -> list[str]:
    "What is wrong with the numbers of a passage: each number not found in a file its unit cites."
    found = []
    methods = sorted((m for m in METHODS if re.search(r"\d", m)), key=len, reverse=True)
    for unit in units(text):
        files = [root / p for p in CITED.findall(unit)]
        body = re.sub(r"`[^`]*`", " ", unit)
        body = re.sub(r"\]\([^)]*\)", "] ", body)
        for m in methods:
            body = body.replace(m, " ").replace(m.replace("%", " %"), " ")
        for pat in NAMES:
            body = re.sub(pat, " ", body)
        stated = [(m.group(), body[m.end():m.end() + 2].strip().startswith("%")) for m in NUMBER.finditer(body)]
        if not stated: continue
        missing = [str(f.relative_to(root)) for f in files if not f.exists()]
        if missing:
            found.append(f"cites files that do not exist: {missing}: {unit[:80]}…")
            continue
        if not files:
            found.append(f"numbers {[s for s, _ in stated]} without a cited file: {unit[:100]}…")
            continue
        pool = [x for f in files for x in (_numbers_of(f, unit) if f.is_file() else [])]
        bad = [s for s, pct in stated if not _matches(s, pool, pct)]
        if bad:
            found.append(f"{bad} not in {[str(f.relative_to(root)) for f in files]}: {unit[:100]}…")
    return found


def section(path: Path, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", path.read_text(encoding="utf-8"), re.M | re.S)
    assert m, f"{path.name} has no '## {title}' section"
    return m.group(1)


def test_the_status_page_evidence_numbers_are_the_files_numbers():
    assert not problems(section(ROOT / "docs" / "status.md", "The evidence about the method"))


def test_the_readme_result_numbers_are_the_files_numbers():
    assert not problems(section(ROOT / "README.md", "Result so far"))


@pytest.mark.parametrize("passage, why", [
    ("- DelTA − DAPO at the last policy: −0.05 points (`figures/cpu/claims.csv`).", None),
    ("- DelTA − DAPO at the last policy: −0.15 points (`figures/cpu/claims.csv`).", "not in"),  # a hand edit
    ("- The primary claim's interval starts at +1.07 points (`figures/cpu/claims.csv`).", "not in"),  # a flipped sign
    ("- DelTA − DAPO at the last policy: −0.05 points.", "without a cited file"),
    ("- DAPO gains 2.0 points (`figures/cpu/nothing.csv`).", "do not exist"),
    ("- Table 9 and issue 37 name things; so do avg@4, Top-50% and 2026-12-04 (`figures/cpu/claims.csv`).", None),
    ("- The same-seed reference: 62.5 % identical completions (`configs/cpu_calibration.jsonl`).", None),
    ("- DAPO gains +2.0 points at the last policy (`figures/cpu/learning.csv`).", None),
    ("- DAPO gains +2.8 points at the last policy (`figures/cpu/learning.csv`).", "not in"),  # forking tokens' gain
])
def test_the_checker_fails_a_number_the_files_do_not_hold(passage, why):
    found = problems(passage)
    assert (not found) if why is None else (len(found) == 1 and why in found[0]), found


RUN_TIME = re.compile(r"about (\d+) min \(median of the SmolLM2 study's (\d+) runs,\s+(?:#\s+)?two at a time on two cores:\s+"
                      r"(?:#\s+)?`figures/cpu/run_times\.csv`\)")


def _quoted_run_times(text: str) -> list[tuple[int, int]]:
    return [(int(m[1]), int(m[2])) for m in RUN_TIME.finditer(text)]


def test_every_document_gives_the_one_measured_run_time_of_the_files():
    """One measured run time per profile, from the files (issue 49): the README, `reproduce.sh --help`, the reproduce
    and status pages each quote the SmolLM2 study's median training time and run count, and both equal
    `figures/cpu/run_times.csv` (written by the results report from the runs' logged step times)."""
    rows = {r["backbone"]: r for r in csv.DictReader((ROOT / "figures/cpu/run_times.csv").open())}
    measured = (round(float(rows["smollm2-long"]["minutes"])), int(float(rows["smollm2-long"]["runs"])))
    for doc in ("README.md", "reproduce.sh", "docs/reproduce.md", "docs/status.md"):
        quoted = _quoted_run_times((ROOT / doc).read_text())
        assert quoted, f"{doc} does not give the SmolLM2 study's run time from figures/cpu/run_times.csv"
        assert set(quoted) == {measured}, f"{doc} says {quoted}, the files {measured}"


def test_the_run_time_check_reads_what_it_should():
    text = ("a SmolLM2 run trains about 47 min (median of the SmolLM2 study's 24 runs, two at a time on two cores: "
            "`figures/cpu/run_times.csv`), then")
    assert _quoted_run_times(text) == [(47, 24)]
    assert _quoted_run_times(text.replace("about 47 min", "47 minutes")) == []  # another wording is not a quote
