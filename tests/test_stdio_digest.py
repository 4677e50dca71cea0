"""Stdio tests compare a digest of the output's tokens (issue 50, item 3): the digest is equal exactly when the
whitespace-separated tokens are, and a right or wrong program scores as the token comparison said it should."""
import hashlib
import random

import pytest

from delta_repro.harness import token_digest
from delta_repro.sandbox import run_tests_sandboxed, sandbox_status


def test_the_digest_is_the_digest_of_the_tokens_joined_by_single_spaces():
    rng = random.Random(0)
    for _ in range(3000):
        s = bytes(rng.choice(b"ab \t\n\r\x0b\x0c7") for _ in range(rng.randint(0, 40)))
        assert token_digest(s) == hashlib.sha256(b" ".join(s.split())).hexdigest(), s
    assert token_digest(b"12\n") == token_digest(b"  12 ") != token_digest(b"1 2")
    assert token_digest(b" " * 100_000 + b"x") == token_digest(b"x")  # one long run: halved until single


@pytest.mark.skipif(not sandbox_status()[0], reason="bubblewrap cannot run here")
@pytest.mark.parametrize("code, expected, passed", [
    ("print(int(input()) * 2)", "8\n", 1),
    ("print(int(input()) * 2, end='   \\n\\n')", "8", 1),  # whitespace around tokens does not matter
    ("print(int(input()) * 3)", "8\n", 0),
    ("print('8 0')", "80", 0),  # tokens, not characters
    ("import sys\nsys.stdout.write('8'); sys.stdout.close()", "8", 1),
    ("print('é 8')", "é 8", 1),  # UTF-8 on both sides
])
def test_stdio_tests_score_by_their_tokens(code, expected, passed):
    r = run_tests_sandboxed(code, [f"__check_io('4\\n', {expected!r})"], mode="stdio")
    assert r.passed == passed, r
