"Claim tests of App. K: which scores are compared (seeds or repeated evaluations), with hand-computed values."
import pandas as pd
import pytest
import yaml

from delta_repro.evaluation import save_results
from delta_repro.experiments import load_plan
from delta_repro.reporting import claim, latex_escape, run_scores, write_table


def _plan(tmp_path, seeds):
    raw = yaml.safe_load(open("configs/smoke.yaml"))
    raw["artefacts"] = {"appK_significance": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DelTA", "DAPO"],
                                              "seeds": seeds}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    return load_plan(tmp_path / "plan.yaml")


def _evaluate(runs_dir, plan, run_id, correct):
    "An eval.csv with one benchmark of 2 problems x 4 samples; `correct[i]` lists sample i's outcome per problem."
    run = plan.runs[run_id]
    rows = [dict(run_id=run_id, method=run.method, seed=run.seed, benchmark="B", problem_id=f"p{j}", sample=i,
                 correct=bool(c[j]), parseable=True, length=3, completion="x")
            for i, c in enumerate(correct) for j in range(2)]
    save_results(pd.DataFrame(rows), runs_dir / run_id / "eval.csv")


def test_scores_by_seed_and_by_repeated_evaluation(tmp_path):
    plan = _plan(tmp_path, [0, 1, 2])
    runs = tmp_path / "runs"
    ids = {(r.method, r.seed): rid for rid, r in plan.runs.items()}
    # DelTA seed s solves (s+1) of the 8 (problem, sample) pairs: Avg. = 12.5, 25, 37.5 %
    for s in range(3):
        flat = [1] * (s + 1) + [0] * (7 - s)
        _evaluate(runs, plan, ids[("DelTA", s)], [flat[2 * i: 2 * i + 2] for i in range(4)])
    assert run_scores(plan, "appK_significance", runs, "DelTA", by="seeds") == [12.5, 25.0, 37.5]
    assert run_scores(plan, "appK_significance", runs, "DelTA") == [12.5, 25.0, 37.5]  # auto: 3 seeds
    # repeated evaluations of seed 2 (samples 0|1|2|3 → both, first, none, none solved): 100, 50, 0, 0 %
    assert run_scores(plan, "appK_significance", runs, "DelTA", repeats=4, by="repeats", seed=2) == [100, 50, 0, 0]
    assert run_scores(plan, "appK_significance", runs, "DelTA", repeats=2, by="repeats") == [25.0, 0.0]  # seed 0
    assert run_scores(plan, "appK_significance", runs, "DAPO") == []  # nothing evaluated yet
    with pytest.raises(ValueError, match="by"): run_scores(plan, "appK_significance", runs, "DelTA", by="runs")
    with pytest.raises(ValueError, match="seed"): run_scores(plan, "appK_significance", runs, "DelTA", seed=7)


def test_auto_uses_repeated_evaluations_below_three_seeds(tmp_path):
    plan = _plan(tmp_path, [0, 1])
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _evaluate(runs, plan, rid, [[1, 1], [1, 0], [0, 0], [0, 0]] if r.seed == 0 else [[0, 0]] * 4)
    assert run_scores(plan, "appK_significance", runs, "DAPO", repeats=4) == [100, 50, 0, 0]


def test_claim_verdicts_hand_computed():
    # 5 seeds vs 5, fully separated: exact one-sided Mann-Whitney p = 1 / C(10, 5) = 1/252
    c = claim("A > B", [6, 7, 8, 9, 10], [1, 2, 3, 4, 5])
    assert c["verdict"] == "supported" and c["p"] == pytest.approx(1 / 252) and (c["n_a"], c["n_b"]) == (5, 5)
    assert c["effect"] == pytest.approx(5.0) and c["ci_low"] <= 5.0 <= c["ci_high"]
    # 3 vs 3 can never reach p < 0.05: the smallest exact p is 1 / C(6, 3) = 0.05
    c3 = claim("A > B", [4, 5, 6], [1, 2, 3])
    assert c3["p"] == pytest.approx(0.05) and c3["verdict"] == "not supported"
    assert claim("A > B", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10])["verdict"] == "not supported"
    assert claim("A >= B", [1, 2, 3], [1, 2, 3], ">=")["verdict"] == "not rejected"
    assert claim("A ≈ B", [6, 7, 8, 9, 10], [1, 2, 3, 4, 5], "≈")["verdict"] == "rejected"
    with pytest.raises(ValueError, match="relation"): claim("A ? B", [1, 2], [3, 4], "?")


def test_unknown_artefact_or_method_is_an_error_not_an_empty_list(tmp_path):
    plan = _plan(tmp_path, [0])
    with pytest.raises(ValueError, match="method"): run_scores(plan, "appK_significance", tmp_path, "DeLTA")
    with pytest.raises(ValueError, match="artefact"): run_scores(plan, "table1", tmp_path, "DelTA")


def test_latex_tables_escape_labels_cells_and_caption(tmp_path):
    import re
    df = pd.DataFrame({"Avg.": [8.13, 3.29], "note": ["a_b & c", "#1"]}, index=pd.Index(["Top-50%", "w/o H(α)"], name="method"))
    md, tex, csv = write_table(df, "t", tmp_path, caption="λ ∈ [0.8, 1.2] at 50% & K=1")
    body = tex.read_text()
    assert not re.findall(r"(?<!\\)%", body), body  # an unescaped % comments out the rest of a LaTeX line
    for s in (r"Top-50\%", r"w/o H($\alpha$)", r"a\_b \& c", r"\#1", r"$\lambda$ $\in$ [0.8, 1.2] at 50\% \& K=1"):
        assert s in body, s
    assert "Top-50%" in md.read_text() and pd.read_csv(csv, index_col=0).loc["Top-50%", "Avg."] == 8.13  # .md and .csv verbatim
    assert latex_escape("x^2~{y}") == r"x\textasciicircum{}2\textasciitilde{}\{y\}"
    assert latex_escape("β ς Σ Α a>b\nc") == r"$\beta$ $\varsigma$ $\Sigma$ A a$>$b c"  # all of Greek; > is ¿ in T1
    tuples = write_table(pd.DataFrame({("a_b", "c%"): [1.0], "x": [("d_e", "%")]}), "u", tmp_path)[1].read_text()
    assert not re.findall(r"(?<!\\)[%_]", tuples), tuples  # non-string labels and cells are escaped too
    with pytest.raises(TypeError, match="df"):
        write_table(pd.Series([1.0]), "s", tmp_path)


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".", "...", ".hidden", "-x", "t ab", "a" * 201])
def test_table_names_must_be_plain_file_stems(tmp_path, name):
    with pytest.raises(ValueError, match="name"):
        write_table(pd.DataFrame({"a": [1]}), name, tmp_path)


def test_figures_are_byte_identical_when_regenerated(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from delta_repro.reporting import save_figure
    digests = []
    for i in range(2):
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(1_700_000_000 + 86_400 * i))  # matplotlib's clock: another day
        fig, ax = plt.subplots()
        ax.plot([1, 3, 2])
        digests.append([p.read_bytes() for p in save_figure(fig, "f", tmp_path / str(i))])
        plt.close(fig)
    assert digests[0] == digests[1]  # no creation date in the PDF: no churn in git for unchanged numbers
    with pytest.raises(ValueError, match="name"):
        save_figure(fig, "...", tmp_path)  # matplotlib would have written "....png.png"
    with pytest.raises(TypeError, match="fig"):
        save_figure(fig.axes[0], "f", tmp_path)
