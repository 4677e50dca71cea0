"""Loaders on fixture files in the hub's schema; offline suites reproducible by seed and solvable as stated."""
from pathlib import Path

import pytest

from delta_repro import data
from delta_repro.rewards import code_reward, math_reward, run_tests_sandboxed

FIX = Path(__file__).parent / "fixtures"
COLUMNS = {"prompt", "question", "answer", "source", "problem_id"}


@pytest.mark.parametrize("loader, fixture, source, n", [
    (data.load_deepmath, "deepmath.jsonl", "DeepMath-103K", 2),
    (data.load_aime24, "aime_2024.jsonl", "AIME24", 2),
    (data.load_aime25, "aime25.jsonl", "AIME25", 2),
    (data.load_aime26, "matharena.jsonl", "AIME26", 2),
    (data.load_hmmt25_feb, "matharena.jsonl", "HMMT25-Feb", 2),
    (data.load_hmmt25_nov, "matharena.jsonl", "HMMT25-Nov", 2),
    (data.load_hmmt26_feb, "matharena.jsonl", "HMMT26-Feb", 2),
    (data.load_brumo25, "matharena.jsonl", "Brumo25", 2),
    (data.load_gpqa_diamond, "gpqa_diamond.jsonl", "GPQA-Diamond", 2),
    (data.load_humaneval_plus, "humanevalplus.jsonl", "HumanEval+", 1),
    (data.load_mbpp_plus, "mbppplus.jsonl", "MBPP+", 1),
    (data.load_livecodebench, "livecodebench.jsonl", "LiveCodeBench", 1),
    (data.load_eurus2_code, "eurus2.jsonl", "Eurus-2-RL-Code", 1),
])
def test_loader_on_hub_schema_fixture(loader, fixture, source, n):
    ds = loader(FIX / fixture)
    assert COLUMNS <= set(ds.column_names) and len(ds) == n
    assert set(ds["source"]) == {source} and len(set(ds["problem_id"])) == n
    assert all(isinstance(p, str) and p for p in ds["prompt"])
    chat = loader(FIX / fixture, template="chat")
    assert chat[0]["prompt"][0]["role"] == "user"


def test_math_fixture_answers_and_ids():
    ds = data.load_aime24(FIX / "aime_2024.jsonl")
    assert ds["answer"] == ["204", "113"] and ds["problem_id"] == ["60", "61"]
    assert ds[0]["prompt"].endswith(data.MATH_INSTRUCTION)


def test_gpqa_options_are_shuffled_deterministically_and_graded_by_letter():
    a, b = data.load_gpqa_diamond(FIX / "gpqa_diamond.jsonl"), data.load_gpqa_diamond(FIX / "gpqa_diamond.jsonl")
    assert a["answer"] == b["answer"] and all(x in "ABCD" for x in a["answer"])
    row = a[0]
    assert f"({row['answer']}) Argon" in row["prompt"]


def test_mmlu_pro_subset_is_seeded():
    a = data.load_mmlu_pro_subset(FIX / "mmlu_pro.jsonl", n=4, seed=1)
    b = data.load_mmlu_pro_subset(FIX / "mmlu_pro.jsonl", n=4, seed=1)
    c = data.load_mmlu_pro_subset(FIX / "mmlu_pro.jsonl", n=4, seed=2)
    assert a["problem_id"] == b["problem_id"] != c["problem_id"] and len(a) == 4
    assert "(E) e" in a[0]["prompt"]


def test_code_loaders_tests_run_in_the_sandbox():
    he = data.load_humaneval_plus(FIX / "humanevalplus.jsonl")[0]
    assert code_reward(["def add(a, b):\n    return a + b"], [he["tests"]]) == [1.0]
    assert code_reward(["def add(a, b):\n    return a - b"], [he["tests"]]) == [0.0]
    mb = data.load_mbpp_plus(FIX / "mbppplus.jsonl")[0]
    assert code_reward(["def similar_elements(a, b): return tuple(set(a) & set(b))"], [mb["tests"]]) == [1.0]
    lcb = data.load_livecodebench(FIX / "livecodebench.jsonl")[0]
    assert lcb["test_mode"] == "stdio" and len(lcb["tests"]) == 2
    eu = data.load_eurus2_code(FIX / "eurus2.jsonl")[0]
    assert eu["question"] == "Read two integers and print their sum." and len(eu["tests"]) == 2


def test_stdio_tests_run_a_program_on_stdin():
    lcb = data.load_livecodebench(FIX / "livecodebench.jsonl")[0]
    good = "n = int(input())\nprint(2 * n)"
    assert run_tests_sandboxed(good, lcb["tests"], mode="stdio") == (2, 2)
    assert run_tests_sandboxed("print(5)", lcb["tests"], mode="stdio") == (0, 2)
    assert code_reward([good], [lcb["tests"]], test_mode=["stdio"]) == [1.0]


def test_unreadable_source_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="source"):
        data.load_aime24(tmp_path / "missing.parquet")
    bad = tmp_path / "bad.txt"
    bad.write_text("x")
    with pytest.raises(ValueError, match="source"):
        data.load_aime24(bad)
    with pytest.raises(ValueError, match="columns"):
        data.load_aime24(FIX / "gpqa_diamond.jsonl")


def test_offline_suites_reproducible_and_solvable():
    a, b = data.reasoning_gym_suite("chain_sum", 16, seed=3), data.reasoning_gym_suite("chain_sum", 16, seed=3)
    assert a["question"] == b["question"] and a["answer"] == b["answer"]
    assert data.reasoning_gym_suite("chain_sum", 16, seed=4)["question"] != a["question"]
    assert math_reward(a["solution"], a["answer"]) == [1.0] * 16
    champ = data.champ_suite()
    assert 50 <= len(champ) <= 270 and len(set(champ["problem_id"])) == len(champ)
    code = data.offline_code_suite(12, seed=5)
    assert code["question"] == data.offline_code_suite(12, seed=5)["question"]
    assert code_reward(code["solution"], code["tests"]) == [1.0] * 12
    assert code_reward(["def f(*a): return None"] * 12, code["tests"]) == [0.0] * 12
    with pytest.raises(ValueError, match="name"):
        data.reasoning_gym_suite("no_such_generator", 2)


CHAIN = dict(min_terms=3, max_terms=5, min_digits=1, max_digits=1, prompt_style="expression")


def test_seeds_alone_collide_and_the_split_scheme_does_not():
    # reasoning-gym item i is Random(seed + i): held-out seed 1000 is training items 1000, 1001, ... of seed 0
    train = data.reasoning_gym_suite("chain_sum", 1100, seed=0, **CHAIN)
    old = data.reasoning_gym_suite("chain_sum", 32, seed=1000, **CHAIN)
    assert data.overlap_table({"train": train}, {"heldout": old})["overlap"].item() == 32
    with pytest.raises(ValueError, match=r"heldout: 32 of 32 problems occur in train"):
        data.assert_disjoint({"train": train}, {"heldout": old})
    # the same seeds with splits: disjoint, distinct held-out problems, deterministic
    train = data.reasoning_gym_suite("chain_sum", 4000, seed=0, split="train", **CHAIN)
    held = {s: data.reasoning_gym_suite("chain_sum", n, seed=0, split=s, **CHAIN) for s, n in [("select", 64), ("eval", 256)]}
    assert data.overlap_table({"train": train}, held)["overlap"].sum() == 0
    data.assert_disjoint({"train": train}, held)
    assert len(set(held["eval"]["question"])) == 256
    assert held["eval"]["question"] == data.reasoning_gym_suite("chain_sum", 256, seed=0, split="eval", **CHAIN)["question"]
    assert all(data.split_of(data.problem_key(q)) == "train" for q in train["question"])
    # the 3-term chains (4,000 possible) are where a seed scheme collides by chance; every split still holds them
    assert any(q.count(" ") == 5 for q in held["eval"]["question"])  # "6 + 5 - 1 ="


def test_problem_key_is_the_problem_not_its_spelling():
    # a +/- chain is the multiset of its signed terms: every reordering is the same problem, with the same answer
    k = data.problem_key("State the answer: 6 + 5 - 1 =")
    assert k == "chain:-1,+5,+6"
    assert k == data.problem_key("6+5-1 =") == data.problem_key("5 - 1 + 6 =") == data.problem_key("-1 + 6 + 5 =")
    assert data.problem_key("6 + 5 + 1 =") != k and data.problem_key("6 + 5 - 1 - 1 =") != k  # signs and counts matter
    assert data.problem_key("0 - 0 + 3 =") == data.problem_key("3 + 0 + 0 =") == "chain:+0,+0,+3"  # -0 is 0
    assert data.split_of(data.problem_key("5 - 1 + 6 =")) == data.split_of(k)
    # a code problem is its specification: the function's name and signature, and its tests (in any order)
    tests = ["assert f(0) == 3", "assert f(1) == 5"]
    a = data.problem_key("Write a Python function `f(x)` that returns 2 * x + 3.", tests)
    assert a == "code:f(x)|assert f(0) == 3|assert f(1) == 5"
    assert a == data.problem_key("Implement `f(x)`: twice x, plus three.", tests[::-1])
    assert a == data.problem_key("Complete it:\ndef f(x):\n    ...", ["assert  f(1) == 5", "assert f(0) == 3"])
    assert data.problem_key("Write `g(x)` that returns 2 * x + 3.", tests) != a  # another name: another spec
    assert data.problem_key("Write `f(x)` that returns 2 * x + 3.", tests[:1]) != a  # weaker tests: another spec
    assert data.problem_key("Read two numbers and print their sum.", ["1 2\n---\n3"]) == "code:|1 2 --- 3"  # stdio
    assert data.problem_key("  What   IS this?\n") == "what is this?"
    assert data.split_of("chain:-1,+5,+6") in data.SPLITS
    with pytest.raises(ValueError, match="text"):
        data.problem_key(None)
    with pytest.raises(ValueError, match="tests"):
        data.problem_key("Write `f(x)`.", "assert f(0) == 3")


def test_reorderings_are_counted_and_never_cross_the_split():
    from datasets import Dataset
    seen = Dataset.from_dict({"question": ["6 + 5 - 1 =", "2 + 2 + 2 ="]})
    held = Dataset.from_dict({"question": ["5 - 1 + 6 =", "2 + 2 + 2 =", "9 - 9 + 1 ="]})
    row = data.overlap_table({"train": seen}, {"held": held}).iloc[0]
    assert (row.overlap, row.reorderings) == (2, 1)  # one spelled alike, one reordered: a spelling check sees one
    train = data.reasoning_gym_suite("chain_sum", 4000, seed=0, split="train", **CHAIN)
    held = data.reasoning_gym_suite("chain_sum", 1024, seed=1000, split="eval", **CHAIN)
    # independently of problem_key: the sorted signed terms, parsed another way
    def terms(q):
        toks = q.replace("=", "").replace("- ", "-").replace("+ ", "").split()
        return tuple(sorted(int(t) for t in toks))
    trained = {terms(q) for q in train["question"]}
    assert not [q for q in held["question"] if terms(q) in trained]
    assert len({terms(q) for q in held["question"]}) == 1024  # and no two held-out problems are reorderings of each other


def test_splits_refuse_bad_requests():
    with pytest.raises(ValueError, match="split"):
        data.reasoning_gym_suite("chain_sum", 4, split="test")
    with pytest.raises(ValueError, match="size"):  # 2-term one-digit chains: a few dozen in "eval", fewer than asked
        data.reasoning_gym_suite("chain_sum", 1000, split="eval", min_terms=2, max_terms=2, min_digits=1, max_digits=1)


def test_code_suite_splits_are_disjoint_and_solvable():
    train, held = data.offline_code_suite(512, split="train"), data.offline_code_suite(64, split="eval")
    assert data.overlap_table({"train": train}, {"code": held})["overlap"].item() == 0
    assert len(set(held["question"])) == 64
    assert code_reward(held["solution"], held["tests"]) == [1.0] * 64
    # the old scheme repeated problems across seeds
    assert data.overlap_table({"t": data.offline_code_suite(512, seed=0)}, {"e": data.offline_code_suite(64, seed=1000)})["overlap"].item() > 0
