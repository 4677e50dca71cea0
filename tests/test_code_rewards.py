"""Code rewards that no completion can forge or stall (issue 27): extraction, verdicts, containers, stdio, the
sandbox's own uid, parallel grading. Each test is built from one of the issue's hostile completions."""
import time

import pytest

from delta_repro.rewards import (MAX_CODE_CHARS, code_reward, extract_boxed, extract_choice, extract_code,
                                 extract_final_answer)

MB = 1_000_000
DEGENERATE = {  # degenerate completions up to 1 MB; each took seconds to minutes in a backtracking extractor
    "unclosed fence, 40,000 newlines": "```python\n" + "\n" * 40_000,
    "unclosed fence, 1 MB of newlines": "```python\n" + "\n" * (MB - 10),
    "unclosed fence, 4,000 newlines, 400,000 dashes": "```python\n" + "\n" * 4_000 + "-" * 400_000,
    "unclosed fence, newlines then dashes to 1 MB": "```\n" + "\n" * 40_000 + "-" * (MB - 40_004),
    "1 MB of fences": "```\n" * (MB // 4),
    "1 MB of backticks": "`" * MB,
    "a 1 MB info string": "```" + "-" * MB + "\n",
    "1 MB of closed blocks": "```python\nx = 1\n```\n" * (MB // 20),
    "1 MB of braces after a box": "\\boxed{" + "{}" * (MB // 2),
    "1 MB of unclosed boxes": "\\boxed{" * (MB // 7),
    "1 MB of 'Answer:' lines": "Answer:\n" * (MB // 8),
}


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_every_extractor_is_linear_and_bounded_on_degenerate_completions(name):
    text = DEGENERATE[name]
    for extract in (extract_code, extract_boxed, extract_final_answer, extract_choice):
        t0 = time.perf_counter()
        extract(text)
        # a generous bound against a stall (benchmarks/graders.py --sections extraction prints the figures):
        # the backtracking fence pattern took 7.4 s on 40,000 newlines and 16 s on the dashes
        assert time.perf_counter() - t0 < 1.0, (name, extract.__name__)


def test_a_degenerate_code_completion_is_graded_zero_quickly():
    t0 = time.perf_counter()
    bad = "```python\n" + "\n" * 4_000 + "-" * 400_000  # end to end this took 11.1 s in the parent
    assert code_reward([bad], [["assert add(1, 2) == 3"]]) == [0.0]
    assert time.perf_counter() - t0 < 10
    assert extract_code("x" * (MAX_CODE_CHARS + 1)) == ""  # past the bound: no program


@pytest.mark.parametrize("fence", ["```python", "```py", "```python3", "```Python", "```PY3", "```", "```python   ",
                                   "```python title=solution.py"])
def test_the_usual_fence_spellings_are_read(fence):
    assert extract_code(f"Here it is:\n{fence}\ndef add(a, b):\n    return a + b\n```\nDone.") == \
        "def add(a, b):\n    return a + b\n"
    assert code_reward([f"{fence}\ndef add(a, b):\n    return a + b\n```"], [["assert add(1, 2) == 3"]]) == [1.0]


def test_blocks_of_other_languages_and_unclosed_blocks_are_not_programs():
    assert extract_code("```bash\npip install x\n```\nthen:\n```python\nx = 1\n```") == "x = 1\n"
    assert extract_code("```python\nx = 1\n```\n```python\ny = 2\n```") == "y = 2\n"  # the last block
    assert extract_code("```python\nx = 1\n```\nnow a fence left open:\n```python\n" + "\n" * 1000) == "x = 1\n"
    assert extract_code("```bash\nls\n```") == "```bash\nls\n```"  # no Python block: the whole completion
