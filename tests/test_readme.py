"""The README as a reader meets it: its first screen (what the package is, the two commands, the result so far with
one figure) fits in 150 lines; every number its result section states equals the committed file that sentence
names; once the replication study is read, its hypotheses' table and its why paragraph are the study's files; every
repository path it and the docs/ pages name exists; and its library example runs as written, on the shipped
warm-started policy (the test makes it 2 steps for speed, nothing else)."""
import csv
import re
from pathlib import Path

import delta_repro.trainer as trainer_mod

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
from conftest import script  # noqa: E402

readme_example = script("readme_example")
NUM = r"[+−-]?\d+(?:\.\d+)?"


def section(text: str, title: str) -> str:
    "The body of the `## title` section of a markdown text (up to the next `## ` heading)."
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"the README has no '## {title}' section"
    return m.group(1)


def _same(stated: str, value: float) -> bool:
    "A number as printed (sign and decimals as written, U+2212 as minus) equals `value` rounded to those decimals."
    stated = stated.replace("−", "-")
    decimals = len(stated.split(".")[1]) if "." in stated else 0
    return abs(float(stated) - value) <= 0.5 * 10 ** -decimals + 1e-9


def _rows(path: str) -> list[dict]:
    return list(csv.DictReader((ROOT / path).open(encoding="utf-8")))


def headline_problems(text: str) -> list[str]:
    """What is wrong with the numbers of the README's 'Result so far' section `text` (empty when nothing is): each
    stated number against the row and column of the file its sentence names, and any number the check does not
    cover (the 95 of '95 % CI' aside), so that no unchecked number can be added."""
    problems, covered = [], []
    # the result table is checked cell by cell against claims.csv by outcome_problems
    text = "\n".join(line for line in text.splitlines() if not line.startswith("|"))
    text = " ".join(text.split())  # sentences wrap across lines
    claim = re.search(rf"DelTA − DAPO, held-out accuracy of the last policy \(`(?P<file>[^`]+)`\): (?P<effect>{NUM}) "
                      rf"points, 95 % CI (?P<lo>{NUM}) to (?P<hi>{NUM}), p = (?P<p>{NUM}), per-problem Wilcoxon p = "
                      rf"(?P<pw>{NUM}), (?P<na>\d+) vs (?P<nb>\d+) seeds, detectable (?P<det>{NUM}) points: "
                      rf"(?P<verdict>[a-z ]+)\.", text)
    if not claim:
        return ["the DelTA − DAPO sentence is missing or reworded"]
    covered.append(claim.span())
    (row,) = [r for r in _rows(claim["file"]) if r["claim"] == "DelTA > DAPO" and r["family"] == "primary"]
    for key, col in [("effect", "effect"), ("lo", "ci_low"), ("hi", "ci_high"), ("p", "p"), ("pw", "p_problems"),
                     ("na", "n_a"), ("nb", "n_b"), ("det", "detectable")]:
        if not _same(claim[key], float(row[col])):
            problems.append(f"DelTA − DAPO {col}: README {claim[key]}, {claim['file']} {float(row[col]):.4f}")
    if claim["verdict"] != row["verdict"]:
        problems.append(f"DelTA − DAPO verdict: README '{claim['verdict']}', {claim['file']} '{row['verdict']}'")
    gains = list(re.finditer(r"Gain (?:over the warm start|at the selected checkpoints) \(`(?P<file>[^`]+)`[^)]*\): "
                             r"(?P<body>[^.]*(?:\.\d[^.]*)*)\.", text))
    if len(gains) != 2:
        return problems + ["the two gain sentences are missing or reworded"]
    for gain in gains:
        covered.append(gain.span())
        # the sentence is about the primary design (tiny-qwen3 on math, 8 seeds); the file also holds the transfer rows
        rows = {r["method"]: r for r in _rows(gain["file"]) if r["backbone"] == "tiny-qwen3" and r["task"] == "math"}
        stated = re.findall(rf"(DelTA|DAPO) ({NUM})(?: points)? \((?:95 % CI )?({NUM}) to ({NUM})\)", gain["body"])
        if sorted(m for m, *_ in stated) != ["DAPO", "DelTA"]:
            problems.append(f"a gain sentence should state DelTA's and DAPO's gain with an interval: {gain['body']}")
        for method, *values in stated:
            for v, col in zip(values, ["gain", "gain low", "gain high"]):
                if not _same(v, float(rows[method][col])):
                    problems.append(f"{method} {col}: README {v}, {gain['file']} {float(rows[method][col]):.4f}")
        warm = re.search(rf"from a warm start at ({NUM}) %", gain["body"])
        if warm and not all(_same(warm[1], float(r["warm start"])) for r in rows.values()):
            problems.append(f"warm start: README {warm[1]}, {gain['file']} {[r['warm start'] for r in rows.values()]}")
    study, spans = study_problems(text)
    problems += study
    covered += spans
    rest = text
    for a, b in sorted(covered, reverse=True):
        rest = rest[:a] + rest[b:]
    unchecked = re.findall(rf"(?<![\w.]){NUM}(?!\w)", rest.replace("95 % CI", ""))  # not the 1 of `gpu1`
    if unchecked:
        problems.append(f"numbers the test does not check against a file: {unchecked}")
    return problems


def study_problems(text: str) -> tuple[list[str], list[tuple]]:
    """The SmolLM2 study's sentences of the result section (`text` on one line): its claim against the row
    "DelTA > DAPO, SmolLM2-135M" of the file named (effect, interval, p, seeds, detectable, equivalence bound, verdict,
    TOST reading), its gains against the smollm2-long rows, its agreement and loss scales against the range of
    the pairs file's rows. Returns (problems, the spans checked)."""
    problems, spans = [], []
    claim = re.search(rf"DelTA − DAPO on SmolLM2-135M, held-out accuracy of the last policy \(`(?P<file>[^`]+)`\): "
                      rf"(?P<effect>{NUM}) points, 95 % CI (?P<lo>{NUM}) to (?P<hi>{NUM}), p = (?P<p>{NUM}), (?P<na>\d+) "
                      rf"vs (?P<nb>\d+) seeds, detectable (?P<det>{NUM}) points, within ±(?P<eq>{NUM}) points \(90 % "
                      rf"interval\): (?P<verdict>[a-z ]+), and (?P<tost>[a-z ]+ ±{NUM})\.", text)
    gain = re.search(rf"Gain of the SmolLM2 study over the warm start \(`(?P<file>[^`]+)`\): DelTA (?P<a>{NUM}) \((?P<alo>{NUM}) "
                     rf"to (?P<ahi>{NUM})\), DAPO (?P<b>{NUM}) \((?P<blo>{NUM}) to (?P<bhi>{NUM})\), from a warm start at "
                     rf"(?P<warm>{NUM}) %\.", text)
    pairs = re.search(rf"Same held-out completions, seed by seed \(`(?P<file>[^`]+)`\): (?P<lo>{NUM}) to (?P<hi>{NUM}) %; "
                      rf"DelTA's loss scale (?P<mlo>{NUM}) to (?P<mhi>{NUM})", text)
    if not (claim and gain and pairs):
        return ["the SmolLM2 study's claim, gain or agreement sentence is missing or reworded"], []
    (row,) = [r for r in _rows(claim["file"]) if r["claim"] == "DelTA > DAPO, SmolLM2-135M"]
    for key, col in [("effect", "effect"), ("lo", "ci_low"), ("hi", "ci_high"), ("p", "p"), ("na", "n_a"), ("nb", "n_b"),
                     ("det", "detectable"), ("eq", "equivalence_bound")]:
        if not _same(claim[key], float(row[col])):
            problems.append(f"SmolLM2 study {col}: README {claim[key]}, {claim['file']} {float(row[col]):.4f}")
    for key, col in (("verdict", "verdict"), ("tost", "tost")):
        if claim[key] != row[col]: problems.append(f"SmolLM2 study {col}: README '{claim[key]}', file '{row[col]}'")
    rows = {r["method"]: r for r in _rows(gain["file"]) if r["backbone"] == "smollm2-long" and r["checkpoint"] == "last policy"}
    for m, keys in (("DelTA", ("a", "alo", "ahi")), ("DAPO", ("b", "blo", "bhi"))):
        for key, col in zip(keys, ("gain", "gain low", "gain high")):
            if not _same(gain[key], float(rows[m][col])):
                problems.append(f"SmolLM2 study {m} {col}: README {gain[key]}, {gain['file']} {float(rows[m][col]):.4f}")
    if not all(_same(gain["warm"], float(r["warm start"])) for r in rows.values()):
        problems.append(f"SmolLM2 study warm start: README {gain['warm']}")
    seeds = [r for r in _rows(pairs["file"]) if r["study"].startswith("DelTA > DAPO, SmolLM2")]
    for key, col, f in (("lo", "identical", min), ("hi", "identical", max), ("mlo", "DelTA loss scale", min),
                        ("mhi", "DelTA loss scale", max)):
        if not seeds or not _same(pairs[key], f(float(r[col]) for r in seeds)):
            problems.append(f"SmolLM2 study {col} {f.__name__}: README {pairs[key]}")
    return problems, [claim.span(), gain.span(), pairs.span()]


def outcome_problems(text: str) -> list[str]:
    """The README's opening outcome (before `## Two commands`) and the result table against `figures/cpu/claims.csv`:
    each study's effect, interval and seeds, and each table row's effect, interval, seeds, verdict, equivalence bound
    and TOST reading, by claim. Empty when every number matches."""
    problems = []
    # the two DelTA > DAPO studies (the replication's hypotheses H0-H3 have a section of their own once read)
    rows = {r["claim"]: r for r in _rows("figures/cpu/claims.csv")
            if r["family"] == "primary" and r["claim"].startswith("DelTA > DAPO")}
    head = " ".join(text.split("## Two commands")[0].split())
    for claim, where in (("DelTA > DAPO, SmolLM2-135M", "on SmolLM2-135M-Instruct"), ("DelTA > DAPO", "on a 1M-parameter policy")):
        m = re.search(rf"{where} (?P<e>{NUM}) points \(95 % CI (?P<lo>{NUM}) to (?P<hi>{NUM}), (?P<n>\d+) seeds a method", head)
        if not m:
            problems.append(f"the opening outcome does not state {claim} as '{where} X points (95 % CI a to b, n seeds a method'")
            continue
        r = rows[claim]
        for key, col in (("e", "effect"), ("lo", "ci_low"), ("hi", "ci_high"), ("n", "n_a"), ("n", "n_b")):
            if not _same(m[key], float(r[col])): problems.append(f"opening {claim} {col}: README {m[key]}, claims.csv {r[col]}")
    table = re.findall(rf"^\| (?P<claim>DelTA > DAPO[^|]*?) \| [^|]* \| (\d+) \| ({NUM}) \[({NUM}), ({NUM})\] \| ([a-z ]+) \| "
                       rf"({NUM}): ([a-z ]+ ±{NUM}) \|$", section(text, "Result so far"), re.M)
    if sorted(t[0] for t in table) != sorted(rows):
        problems.append(f"the result table should have one row per DelTA > DAPO claim (the SmolLM2 study, the cpu profile), "
                        f"has {[t[0] for t in table]}")
    return problems + _cell_problems([(c, n, n, *rest) for c, n, *rest in table], rows)


def _cell_problems(table: list[tuple], rows: dict) -> list[str]:
    "Each parsed table row (claim, n_a, n_b, effect, low, high, verdict, bound, tost) against claims.csv's row `rows[claim]`."
    problems = []
    for claim, na, nb, e, lo, hi, verdict, bound, tost in table:
        r = rows.get(claim)
        if r is None: continue
        for v, col in ((na, "n_a"), (nb, "n_b"), (e, "effect"), (lo, "ci_low"), (hi, "ci_high"), (bound, "equivalence_bound")):
            if not _same(v, float(r[col])): problems.append(f"table {claim} {col}: README {v}, claims.csv {r[col]}")
        if verdict != r["verdict"] or tost != r["tost"]:
            problems.append(f"table {claim} verdict: README '{verdict}; {tost}', claims.csv '{r['verdict']}; {r['tost']}'")
    return problems


def test_the_opening_outcome_and_the_result_table_are_the_claims_file():
    text = README.read_text()
    assert outcome_problems(text) == []
    # the site's landing page opens with the same sentence, checked alike
    landing = (ROOT / "docs" / "index.md").read_text().split("```{toctree}")[0]
    assert [p for p in outcome_problems(landing + "\n## Two commands\n## Result so far\n" + section(text, "Result so far"))] == []
    assert any("opening DelTA > DAPO, SmolLM2-135M effect" in p for p in outcome_problems(text.replace("−1.04 points (95", "−1.40 points (95")))
    assert any("table DelTA > DAPO ci_high" in p for p in outcome_problems(text.replace("[−1.07, +0.96]", "[−1.07, +0.69]")))
    assert any("verdict" in p for p in outcome_problems(text.replace("| not supported |", "| supported |")))


def test_readme_first_screen():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 150, f"{len(lines)} lines: move details to docs/"
    # the outcome comes first, in plain words, before anything to run or read
    assert next(i for i, l in enumerate(lines) if l.startswith("**What we found")) < 12
    headings = [l for l in lines if l.startswith("## ")]
    assert headings[:2] == ["## Two commands", "## Result so far"], headings
    assert lines.index("## Result so far") < 60
    head = section(text, "Result so far")
    assert "primary claim" in head and "not supported" in head and "measured on training problems" in head
    (figure,) = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", head)
    assert (ROOT / figure).is_file() and figure.endswith(".png"), figure
    commands = re.findall(r"^bash (\S+)", section(text, "Two commands"), re.M)
    assert commands == ["reproduce.sh", "test.sh"] and all((ROOT / c).is_file() for c in commands)


def test_every_number_of_the_result_is_the_one_in_the_file_it_names():
    head = section(README.read_text(), "Result so far")
    assert headline_problems(head) == []
    # the check fails when a number drifts from its file or a number it does not know is added
    assert any("effect" in p for p in headline_problems(head.replace("−0.05 points", "−0.15 points")))
    assert any("DAPO gain high" in p for p in headline_problems(head.replace("+0.4 to +3.5)", "+0.4 to +3.9)")))
    assert any("DAPO gain low" in p for p in headline_problems(head.replace("(−0.1 to", "(+0.1 to")))
    assert any("p:" in p for p in headline_problems(head.replace("p = 0.49", "p = 0.04")))
    assert any("warm start" in p for p in headline_problems(head.replace("69.7 %", "54.7 %")))
    assert any("does not check" in p for p in headline_problems(head + "\nDelTA wins by 4 points.\n"))
    assert any("SmolLM2 study effect" in p for p in headline_problems(head.replace("−1.04 points", "−0.04 points")))
    assert any("SmolLM2 study identical max" in p for p in headline_problems(head.replace("to 68.75 %", "to 98.75 %")))
    assert any("SmolLM2 study tost" in p for p in headline_problems(head.replace("and equivalent within", "and not equivalent within")))


def _named_paths(page: Path) -> list[str]:
    "Repository paths a markdown page names: link targets, and `inline code` under a top-level directory."
    text = page.read_text()
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} - {"runs", "_site"}
    links = [(page.parent / t).relative_to(ROOT).as_posix() if not t.startswith("/") else t
             for t in re.findall(r"\]\(([^)#\s]+)\)", text) if "://" not in t]
    code = [c for c in re.findall(r"`([\w./-]+)`", text) if "/" in c and c.split("/")[0] in tops]
    return links + code


def test_every_path_the_readme_and_the_docs_name_exists():
    missing = [f"{page.relative_to(ROOT)}: {p}" for page in [README, *sorted((ROOT / "docs").glob("*.md"))]
               for p in _named_paths(page)
               if not ((ROOT / p).exists() or (ROOT / f"{p}.ipynb").exists())]
    assert not missing, missing


def test_readme_trainer_example_runs(monkeypatch, tmp_path):
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "DeltaGRPOTrainer(" in b]
    assert "model, tokenizer =" in example and "dataset =" in example  # self-contained: nothing is injected below
    # keep the example's own settings (its CPU/GPU switch included); only make it short (tests/readme_example.py;
    # tests/test_packaging.py runs the same file against the installed wheel, outside the clone)
    monkeypatch.chdir(tmp_path)
    ns = readme_example.run(README.read_text(), steps=2)
    logs = ns["trainer"].state.log_history
    assert ns["trainer"].state.global_step == 2 and trainer_mod.DeltaGRPOConfig.__name__ == "DeltaGRPOConfig"
    assert any("delta/lam_mean" in l for l in logs) and ns["args"].credit_assignment == "delta"
    assert ns["args"].use_cpu and not ns["args"].bf16  # the example's own switch picked the CPU settings here
    assert any(l.get("reward", 0) > 0 for l in logs)  # the warm start answers some problems: there is a signal


STUDY = "figures/cpu/results_study_replication.md"
WHY = re.compile(r"^\*\*Why DelTA (?:does not help|helps) here\.\*\* .+$", re.M)


def why_problems(readme: str, study: str) -> list[str]:
    """The README against the replication study's words (`STUDY`, written by the results page from claims.csv and the
    runs): once the study's "Why DelTA ..." paragraph is written (every hypothesis read at its registered seeds), the
    README quotes it whole, every number as the file has it; before, the README gives no why of its own and says the
    study is being measured. Empty when they agree."""
    flat = " ".join(readme.split())
    why = WHY.search(study)
    if why is None:
        problems = ["the README gives a why while the study has none yet"] if "**Why DelTA" in readme else []
        if "is being measured now" not in flat: problems.append("the README does not say the study is being measured")
        return problems
    return [] if " ".join(why.group(0).split()) in flat else [f"the README does not quote {STUDY}'s why paragraph whole"]


WHY_SECTION = re.compile(r"^## (Why DelTA (?:does not help|helps) here)$", re.M)


def hypothesis_problems(readme: str, rows: dict) -> list[str]:
    """The README's table of the replication's hypotheses against `figures/cpu/claims.csv` (`rows`, by claim): once the
    study is read the README has a section `## Why DelTA does (not) help here` whose table has one row per hypothesis
    H0-H3 (`| H1 DAPO > DelTA | 12 vs 12 | +0.68 [−0.81, +2.30] | not supported | 2.00: not shown equivalent within ±2 |`),
    each cell as claims.csv has it. Empty when they agree."""
    heading = WHY_SECTION.search(readme)
    if heading is None: return ["the README has no section '## Why DelTA ... here'"]
    table = re.findall(rf"^\| (H\d [^|]*?) \| (\d+) vs (\d+) \| ({NUM}) \[({NUM}), ({NUM})\] \| ([^|]+?) \| ({NUM}): "
                       rf"([^|]+?) \|$", section(readme, heading[1]), re.M)
    hs = sorted(c for c in rows if re.match(r"H\d ", c))
    problems = [] if sorted(t[0] for t in table) == hs else [f"the hypotheses' table should have a row for each of {hs}, "
                                                            f"has {[t[0] for t in table]}"]
    return problems + _cell_problems(table, rows)


def test_the_readme_shows_the_hypotheses_once_the_study_is_read():
    rows = {r["claim"]: r for r in _rows("figures/cpu/claims.csv")}
    readme = README.read_text()
    if WHY.search((ROOT / STUDY).read_text(encoding="utf-8")):
        assert hypothesis_problems(readme, rows) == []
    else:  # interim readings stay on the study's page and the status page
        assert WHY_SECTION.search(readme) is None
    # the check, on a README made for it from the claims file as it stands
    h = {c: r for c, r in rows.items() if re.match(r"H\d ", c)}
    assert h, "claims.csv has no hypothesis H0-H3"
    line = lambda c, r: (f"| {c} | {r['n_a']} vs {r['n_b']} | {float(r['effect']):+.2f} [{float(r['ci_low']):+.2f}, "
                         f"{float(r['ci_high']):+.2f}] | {r['verdict']} | {float(r['equivalence_bound']):.2f}: {r['tost']} |")
    made = "## Why DelTA does not help here\n\n| hypothesis | seeds | effect | verdict | within ± |\n|---|---|---|---|---|\n"
    made += "\n".join(line(c, r) for c, r in h.items()) + "\n\n## Use DelTA\n"
    assert hypothesis_problems(made, h) == []
    first, r = next(iter(h.items()))
    wrong = made.replace(line(first, r), line(first, {**r, "effect": float(r["effect"]) + 0.5}))
    assert any(f"table {first} effect" in p for p in hypothesis_problems(wrong, h))
    assert any("should have a row" in p for p in hypothesis_problems(made.replace(line(first, r) + "\n", ""), h))
    assert hypothesis_problems("## Result so far\n", h) == ["the README has no section '## Why DelTA ... here'"]


def test_the_readme_quotes_the_study_s_why_once_it_is_read():
    study = (ROOT / STUDY).read_text(encoding="utf-8")
    assert study.startswith("**") and "registered runs have finished" in study
    readme = README.read_text()
    assert why_problems(readme, study) == []
    # the check, on a study before and after its why is written: it fails both ways, and on a misquoted number
    interim = "**The study**\n\n18 of the 48 registered runs have finished.\n"
    read = interim + "\n**Why DelTA does not help here.** The control holds: +0.22 [−1.10, +1.50] points.\n"
    plain = "The replication is being measured now.\n"
    assert why_problems(plain, interim) == [] and why_problems("The replication is done.", interim)
    assert why_problems(plain + "**Why DelTA helps here.** It is the optimizer.", interim)
    assert why_problems(plain, read)
    quoted = plain + "**Why DelTA does not help here.** The control holds: +0.22 [−1.10, +1.50]\npoints.\n"
    assert why_problems(quoted, read) == [] and why_problems(quoted.replace("+0.22", "+0.32"), read)
