"""Issue 40: a completion's score is what running its tests in plain Python would give. A corpus of correct programs
in everyday styles must all score 1 (five times in a row), a corpus of hostile ones 0; the tests' own work runs in the
judge's sandbox, so it costs the trainer next to nothing and the prompt's own helpers cannot be forged."""
import resource
import time

import pytest

from delta_repro.rewards import code_reward
from delta_repro.sandbox import memory_bound, prompt_helpers, run_tests_sandboxed, sandbox_status

OK, WHY = sandbox_status()
needs_sandbox = pytest.mark.skipif(not OK, reason=f"no isolation on this machine: {WHY}")

ENCODE_CYCLIC = ("def encode_cyclic(s: str):\n    groups = [s[(3 * i):min((3 * i + 3), len(s))] for i in range((len(s) + 2) // 3)]\n"
                 "    groups = [(group[1:] + group[0]) if len(group) == 3 else group for group in groups]\n    return ''.join(groups)\n")
CYCLIC_PROMPT = ENCODE_CYCLIC + "\n\ndef decode_cyclic(s: str):\n    \"\"\"Takes a string encoded with encode_cyclic.\"\"\"\n"
CYCLIC_TEST = ("def check(candidate):\n    for s in ('abcdefg', 'hello world', 'xy', ''):\n"
               "        assert candidate(encode_cyclic(s)) == s\ncheck(decode_cyclic)")
ENCODE_SHIFT = "def encode_shift(s: str):\n    return ''.join([chr(((ord(ch) + 5 - ord('a')) % 26) + ord('a')) for ch in s])\n"
SHIFT_PROMPT = ENCODE_SHIFT + "\n\ndef decode_shift(s: str):\n    \"\"\"Takes a string encoded with encode_shift.\"\"\"\n"
SHIFT_TEST = "def check(candidate):\n    for s in ('abc', 'hello', 'zzz'):\n        assert candidate(encode_shift(s)) == s\ncheck(decode_shift)"
POLY_PROMPT = ("import math\n\ndef poly(xs: list, x: float):\n    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n"
               "def find_zero(xs: list):\n    \"\"\"Finds x such that poly(x) = 0.\"\"\"\n")
POLY_TEST = ("def check(candidate):\n    for xs in ([1, 2], [-6, 11, -6, 1]):\n        x = candidate(xs)\n"
             "        assert math.fabs(poly(xs, x)) < 1e-4\ncheck(find_zero)")
FIND_ZERO = ("def find_zero(xs):\n    lo, hi = -10.0, 10.0\n    f = lambda x: sum(c * x ** i for i, c in enumerate(xs))\n"
             "    while f(lo) * f(hi) > 0:\n        lo, hi = lo * 2, hi * 2\n    for _ in range(200):\n"
             "        mid = (lo + hi) / 2\n        if f(lo) * f(mid) <= 0: hi = mid\n        else: lo = mid\n    return lo\n")

# (name, program, tests, mode, helpers): correct programs as people write them; plain Python passes every one
BENIGN = [
    # --- stdio: a program run as `python solution.py` ---
    ("stdio exit()", "print(int(input()) * 2)\nexit()", ['__check_io("3\\n", "6\\n")'], "stdio", None),
    ("stdio quit(0)", "print(int(input()) + 1)\nquit(0)", ['__check_io("3\\n", "4\\n")'], "stdio", None),
    ("stdio writes from atexit", "import atexit\nn = int(input())\natexit.register(lambda: print(n * n))",
     ['__check_io("5\\n", "25\\n")'], "stdio", None),
    ("stdio closes its stdout", "import sys\nprint(sum(map(int, input().split())))\nsys.stdout.close()",
     ['__check_io("1 2 3\\n", "6\\n")'] * 10, "stdio", None),
    ("stdio reads fileinput", "import fileinput\nprint(sum(int(line) for line in fileinput.input()))",
     ['__check_io("1\\n2\\n3\\n", "6\\n")'], "stdio", None),
    ("stdio reads sys.argv", "import sys\nargs = sys.argv[1:]\ndata = open(args[0]).read() if args else sys.stdin.read()\n"
     "print(len(data.split()))", ['__check_io("a b c\\n", "3\\n")'], "stdio", None),
    ("stdio sys.stdin.buffer and sys.exit(main())", "import sys\ndef main():\n    a, b = map(int, sys.stdin.buffer.read().split())\n"
     "    sys.stdout.write(f'{a * b}\\n')\n    return 0\nif __name__ == '__main__':\n    sys.exit(main())",
     ['__check_io("6 7", "42")'], "stdio", None),
    ("stdio print(*xs, sep)", "n = int(input())\nprint(*range(n), sep=' ')", ['__check_io("4", "0 1 2 3")'], "stdio", None),
    # --- functional: what a call returns or does, compared as plain Python compares it ---
    ("sorts its argument in place", "def sort_in_place(a):\n    a.sort()", ["a = [3, 1, 2]\nsort_in_place(a)\nassert a == [1, 2, 3]"],
     "functional", None),
    ("changes a nested argument in place", "def sort_rows(m):\n    for row in m:\n        row.sort()",
     ["m = [[3, 1], [2, 0]]\nrow = m[0]\nsort_rows(m)\nassert m == [[1, 3], [0, 2]] and row == [1, 3]"], "functional", None),
    ("fills a dict argument", "def count_into(d, xs):\n    for x in xs:\n        d[x] = d.get(x, 0) + 1",
     ["d = {}\ncount_into(d, 'abca')\nassert d == {'a': 2, 'b': 1, 'c': 1}"], "functional", None),
    ("returns its argument (is)", "def push(stack, x):\n    stack.append(x)\n    return stack",
     ["s = [1]\nassert push(s, 2) is s and s == [1, 2]"], "functional", None),
    ("generator driven with next", "def gen():\n    yield 1\n    yield 2", ["g = gen()\nassert next(g) == 1 and next(g) == 2\n"
     "try:\n    next(g)\nexcept StopIteration:\n    pass\nelse:\n    raise AssertionError"], "functional", None),
    ("generator driven with .send", "def averager():\n    total, n, avg = 0, 0, None\n    while True:\n"
     "        x = yield avg\n        total, n = total + x, n + 1\n        avg = total / n",
     ["g = averager()\nnext(g)\nassert g.send(10) == 10.0 and g.send(20) == 15.0"], "functional", None),
    ("generator read whole", "def squares(n):\n    for i in range(n):\n        yield i * i", ["assert list(squares(5000)) == [i * i for i in range(5000)]",
     "assert sum(squares(10)) == 285"], "functional", None),
    ("Fraction", "from fractions import Fraction\ndef harmonic(n): return sum(Fraction(1, k) for k in range(1, n + 1))",
     ["from fractions import Fraction\nassert harmonic(3) == Fraction(11, 6)", "assert harmonic(2).denominator == 2"], "functional", None),
    ("Decimal", "from decimal import Decimal\ndef money(s): return Decimal(s) * 2",
     ["from decimal import Decimal\nassert money('0.10') == Decimal('0.20') and str(money('0.10')) == '0.20'"], "functional", None),
    ("IntEnum", "import enum\nclass Color(enum.IntEnum):\n    RED = 1\n    GREEN = 2\ndef pick(): return Color.GREEN",
     ["assert pick() == 2 and pick().name == 'GREEN'"], "functional", None),
    ("Counter lookups and most_common", "from collections import Counter\ndef tally(s): return Counter(s)",
     ["c = tally('abracadabra')\nassert c['z'] == 0 and c.most_common(1) == [('a', 5)] and c == {'a': 5, 'b': 2, 'r': 2, 'c': 1, 'd': 1}"],
     "functional", None),
    ("namedtuple fields", "from collections import namedtuple\nPoint = namedtuple('Point', 'x y')\ndef mid(a, b): return Point((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)",
     ["p = mid((0, 0), (2, 4))\nassert p.x == 1 and p.y == 2 and p == (1, 2)"], "functional", None),
    ("OrderedDict in its order", "from collections import OrderedDict\ndef lru(keys):\n    d = OrderedDict()\n"
     "    for k in keys:\n        d[k] = True\n        d.move_to_end(k)\n    return d",
     ["from collections import OrderedDict\nassert lru('abca') == OrderedDict([('b', True), ('c', True), ('a', True)])"], "functional", None),
    ("defaultdict with its factory", "from collections import defaultdict\ndef group(xs):\n    d = defaultdict(list)\n"
     "    for x in xs:\n        d[x % 2].append(x)\n    return d", ["d = group([1, 2, 3])\nassert d == {1: [1, 3], 0: [2]}\nd[5].append(9)\nassert d[5] == [9]"],
     "functional", None),
    ("deque compared with a deque", "from collections import deque\ndef rot(xs):\n    d = deque(xs)\n    d.rotate(1)\n    return d",
     ["from collections import deque\nassert rot([1, 2, 3]) == deque([3, 1, 2])", "assert list(rot([1, 2])) == [2, 1]"], "functional", None),
    ("range result", "def evens(n): return range(0, n, 2)", ["assert evens(7) == range(0, 7, 2) and list(evens(5)) == [0, 2, 4]"],
     "functional", None),
    ("bytearray result", "def flip(b): return bytearray(x ^ 1 for x in b)", ["assert flip(b'\\x00\\x01') == bytearray(b'\\x01\\x00')"],
     "functional", None),
    ("large result", "def upto(n): return list(range(n))", ["assert upto(1_000_000) == list(range(1_000_000))"], "functional", None),
    ("deep result", "def nest(n):\n    x = []\n    for _ in range(n):\n        x = [x]\n    return x",
     ["def depth(x):\n    d = 0\n    while x:\n        x, d = x[0], d + 1\n    return d\nassert depth(nest(1500)) == 1500"], "functional", None),
    ("big integer", "def fact(n):\n    r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r",
     ["import math\nassert fact(5000) == math.factorial(5000)"], "functional", None),
    ("keyword arguments and floats", "import math\ndef area(r, *, scale=1.0): return math.pi * r * r * scale",
     ["import math\nassert math.isclose(area(2, scale=0.5), 2 * math.pi)", "assert math.isnan(area(float('nan')))"], "functional", None),
    ("dict order and sets", "def index(words):\n    out = {}\n    for i, w in enumerate(words):\n        out.setdefault(w, set()).add(i)\n    return out",
     ["d = index(['b', 'a', 'b'])\nassert list(d) == ['b', 'a'] and d == {'b': {0, 2}, 'a': {1}}"], "functional", None),
    ("class instance methods", "class Stack:\n    def __init__(self): self.items = []\n    def push(self, x): self.items.append(x)\n"
     "    def pop(self): return self.items.pop()\ndef make(): return Stack()",
     ["s = make()\ns.push(1)\ns.push(2)\nassert s.pop() == 2 and s.pop() == 1"], "functional", None),
    ("HumanEval/38 with the prompt's encode_cyclic", ENCODE_CYCLIC + "\ndef decode_cyclic(s):\n    return encode_cyclic(encode_cyclic(s))",
     [CYCLIC_TEST], "functional", prompt_helpers(CYCLIC_PROMPT, "decode_cyclic")),
    ("HumanEval/50 without repeating encode_shift", "def decode_shift(s):\n    return ''.join(chr((ord(c) - 5 - 97) % 26 + 97) for c in s)",
     [SHIFT_TEST], "functional", prompt_helpers(SHIFT_PROMPT, "decode_shift")),
    ("HumanEval/32 with the prompt's poly", FIND_ZERO, [POLY_TEST], "functional", prompt_helpers(POLY_PROMPT, "find_zero")),
    ("a fence inside a string literal", "Here is the code:\n```python\ndef fence(lang):\n    return '```' + lang\n```\n"
     "It returns an opening fence.", ["assert fence('py') == '```py'"], "functional", None),
    ("HumanEval+ numpy assertion", "def add(a, b): return a + b",
     ["import numpy as np\ndef assertion(out, exp, atol):\n    exact_match = out == exp\n    if atol == 0 and isinstance(exp, float):\n"
      "        atol = 1e-6\n    if not exact_match and atol != 0:\n        assert np.allclose(out, exp, rtol=1e-07, atol=atol)\n"
      "    else:\n        assert exact_match\ndef check(candidate):\n    for inp, exp in [([1, 2], 3), ([0.1, 0.2], 0.3)]:\n"
      "        assertion(candidate(*inp), exp, 0)\ncheck(add)"], "functional", None),
    # exceptions caught by their class hierarchy, as plain Python catches them (issue 50, item 2)
    ("its own ValueError subclass", "class BadInput(ValueError): pass\ndef parse(s):\n    if not s.isdigit(): raise BadInput(s)\n"
     "    return int(s)", ["try:\n    parse('x')\n    assert False\nexcept ValueError as e:\n    assert type(e).__name__ == 'BadInput'"],
     "functional", None),
    ("json's JSONDecodeError as a ValueError", "import json\ndef load(s): return json.loads(s)",
     ["try:\n    load('{')\n    assert False\nexcept ValueError:\n    pass"], "functional", None),
    ("UnicodeDecodeError as itself and as a ValueError", "def text(b): return b.decode('utf-8')",
     ["try:\n    text(b'\\xff')\n    assert False\nexcept UnicodeDecodeError:\n    pass",
      "try:\n    text(b'\\xff')\n    assert False\nexcept ValueError:\n    pass"], "functional", None),
    ("a deep recursion under the limit the program sets", "import sys\nsys.setrecursionlimit(10_000)\n"
     "def depth(n): return 0 if n == 0 else 1 + depth(n - 1)", ["assert depth(3_000) == 3_000"], "functional", None),
    ("a generator that raises after the items the test takes", "def gen():\n    yield 1\n    yield 2\n    yield 3\n"
     "    raise ValueError('past the end')", ["from itertools import islice\nassert list(islice(gen(), 3)) == [1, 2, 3]"],
     "functional", None),
    ("fills a keyword argument in place", "def fill(n, out=None):\n    out.extend(range(n))\n    return out",
     ["buf = []\nfill(3, out=buf)\nassert buf == [0, 1, 2]", "buf = []\nassert fill(2, out=buf) is buf"], "functional", None),
    ("a program that imports numpy", "import numpy as np\ndef total(xs):\n    return int(np.asarray(xs).sum())",
     ["assert total([1, 2, 3]) == 6"], "functional", None),
    ("stdio a program that imports numpy", "import numpy as np\nprint(int(np.arange(int(input())).sum()))",
     ['__check_io("5\\n", "10\\n")'], "stdio", None),
    # the program's own objects, used by the test as plain Python uses them (issue 50, item 2)
    ("a linked list walked by the test", "class Node:\n    def __init__(self, val, nxt=None):\n        self.val, self.next = val, nxt\n"
     "def build(xs):\n    head = None\n    for x in reversed(xs):\n        head = Node(x, head)\n    return head",
     ["n = build([1, 2, 3])\nout = []\nwhile n is not None:\n    out.append(n.val)\n    n = n.next\nassert out == [1, 2, 3]",
      "assert build([4]).val == 4 and build([4]).next is None"], "functional", None),
    ("a dataclass compared with one the test makes", "from dataclasses import dataclass\n@dataclass\nclass Point:\n    x: int\n"
     "    y: int\ndef mirror(p):\n    return Point(p.y, p.x)", ["assert mirror(Point(1, 2)) == Point(2, 1)",
     "assert mirror(Point(1, 2)).x == 2", "assert mirror(Point(1, 2)) != Point(1, 2)"], "functional", None),
    ("len and str of its own object", "class Bag:\n    def __init__(self, *xs):\n        self.xs = list(xs)\n"
     "    def __len__(self):\n        return len(self.xs)\n    def __str__(self):\n        return f'Bag{self.xs}'\n"
     "def make(*xs):\n    return Bag(*xs)", ["assert len(make(1, 2)) == 2", "assert str(make(1)) == 'Bag[1]'", "assert len(make()) == 0",
     "assert make(3).xs == [3]"], "functional", None),
    ("a SimpleNamespace's attributes", "from types import SimpleNamespace\ndef config():\n    return SimpleNamespace(depth=3, name='x')",
     ["c = config()\nassert c.depth == 3 and c.name == 'x' and not hasattr(c, 'width')"], "functional", None),
    ("a defaultdict with a factory of its own", "from collections import defaultdict\ndef counts(xs):\n"
     "    d = defaultdict(lambda: 0)\n    for x in xs:\n        d[x] += 1\n    return d",
     ["c = counts('aab')\nassert c == {'a': 2, 'b': 1} and c['z'] == 0"], "functional", None),
    ("an array.array compared with one the test makes", "import array\ndef squares(n):\n    return array.array('i', (i * i for i in range(n)))",
     ["import array\nassert squares(3) == array.array('i', [0, 1, 4])", "assert list(squares(2)) == [0, 1]"], "functional", None),
    ("dict views compared as plain Python compares them", "def keys(d):\n    return d.keys()\ndef pairs(d):\n    return d.items()",
     ["assert keys({'a': 1, 'b': 2}) == {'a', 'b'} and 'a' in keys({'a': 1})", "assert pairs({'a': 1}) == {('a', 1)}"],
     "functional", None),
    ("a dict subclass with attribute access", "class Config(dict):\n    def __getattr__(self, k):\n        return self[k]\n"
     "def load():\n    return Config(depth=3)", ["c = load()\nassert c == {'depth': 3} and c.depth == 3 and isinstance(c, dict)"],
     "functional", None),
    ("a str subclass with a method of its own", "class Name(str):\n    def initials(self):\n"
     "        return ''.join(w[0] for w in self.split())\ndef name(s):\n    return Name(s)",
     ["n = name('ada lovelace')\nassert n == 'ada lovelace' and n.initials() == 'al' and n.upper() == 'ADA LOVELACE'"],
     "functional", None),
    ("a str Enum member", "import enum\nclass Op(str, enum.Enum):\n    ADD = '+'\ndef op():\n    return Op.ADD",
     ["assert op() == '+' and op().name == 'ADD'"], "functional", None),
    ("HumanEval+ tolerance: ints beside floats in a list", "def halves(xs):\n    return [x if x % 2 == 0 else x * 0.1 * 5 for x in xs]",
     ["import numpy as np\ndef assertion(out, exp, atol):\n    exact_match = out == exp\n    if atol == 0 and isinstance(exp, list):\n"
      "        atol = 1e-6\n    if not exact_match and atol != 0:\n        assert np.allclose(out, exp, rtol=1e-07, atol=atol)\n"
      "    else:\n        assert exact_match\nassertion(halves([2, 3]), [2.0, 1.5], 0)"], "functional", None),    # the program's subclasses of built-ins, kept one value with the test's copy; numpy's values; views (review of issue 50)
    ("a list subclass changed by its own methods", "class Stack(list):\n    def push(self, x):\n        self.append(x)\n"
     "    def peek(self):\n        return self[-1]\ndef make():\n    return Stack()",
     ["s = make()\ns.push(1)\ns.push(2)\nassert s.peek() == 2 and len(s) == 2 and s.pop() == 2 and s == [1]"], "functional", None),
    ("a subclass instance changed by the test, then read by the program", "class Path(list):\n    def total(self):\n"
     "        return sum(self)\ndef make():\n    return Path([1])\ndef extend(p, xs):\n    p.extend(xs)\n    return p",
     ["p = make()\np.append(2)\nassert p.total() == 3 and extend(p, [3]) is p and p == [1, 2, 3]"], "functional", None),
    ("a hashable dict subclass as a key", "class FrozenDict(dict):\n    def __hash__(self):\n"
     "        return hash(frozenset(self.items()))\ndef f():\n    return {FrozenDict(a=1): 'x'}",
     ["assert list(f().values()) == ['x']", "assert 1 + 1 == 2"], "functional", None),
    ("a namedtuple with renamed fields", "from collections import namedtuple\nRow = namedtuple('Row', ['id', 'class'], rename=True)\n"
     "def f():\n    return Row(1, 2)", ["assert f() == (1, 2) and f().id == 1 and f()._1 == 2"], "functional", None),
    ("numpy's scalars and arrays as results", "import numpy as np\ndef total(xs):\n    return np.sum(xs)\n"
     "def positive(x):\n    return np.bool_(x > 0)\ndef halves(n):\n    return np.arange(n) / 2",
     ["assert total([1, 2, 3]) == 6", "assert positive(3) and not positive(-1)",
      "import numpy as np\nassert np.allclose(halves(3), [0.0, 0.5, 1.0]) and halves(3).shape == (3,)"], "functional", None),
    ("an int result against a float under np.allclose", "def count(xs):\n    return len(xs)",
     ["import numpy as np\nassert np.allclose(count([1, 2, 3]), 3.0) and np.isclose(count([]), 0.0)"], "functional", None),
    ("a view of the test's own dict, live", "def keys(d):\n    return d.keys()",
     ["d = {'a': 1}\nk = keys(d)\nd['b'] = 2\nassert k == {'a', 'b'}"], "functional", None),    # second hostile review: the program's own changes seen, objects holding themselves, numpy strings, str Enums
    ("the program changes its own object the test holds", "class History(list):\n    def last(self):\n        return self[-1]\n"
     "_h = History()\ndef record(x):\n    _h.append(x)\ndef history():\n    return _h",
     ["h = history()\nrecord(5)\nassert h.last() == 5 and h == [5]", "assert history() == [5]"], "functional", None),
    ("a list subclass that holds itself", "class Tree(list):\n    def size(self):\n        return 1\ndef build():\n"
     "    t = Tree()\n    t.append(t)\n    return t", ["assert build().size() == 1", "t = build()\nassert t[0] is t and str(t) == '[[...]]'"],
     "functional", None),
    ("a heap kept in a list subclass", "import heapq\nclass MinHeap(list):\n    def push(self, x):\n        heapq.heappush(self, x)\n"
     "    def pop_min(self):\n        return heapq.heappop(self)\ndef make():\n    return MinHeap()",
     ["h = make()\nfor i in range(100):\n    h.push(100 - i)\nassert [h.pop_min() for _ in range(100)] == list(range(1, 101))"],
     "functional", None),
    ("numpy strings", "import numpy as np\ndef uniq(ws):\n    return list(np.unique(np.array(ws)))", ["assert uniq(['b', 'a', 'b']) == ['a', 'b']"],
     "functional", None),
    ("str Enum members in a list", "import enum\nclass Op(str, enum.Enum):\n    ADD = '+'\n    SUB = '-'\ndef ops():\n    return list(Op)",
     ["assert ops() == ['+', '-'] and str(ops()[0]) == 'Op.ADD'", "assert repr(ops()) == \"[<Op.ADD: '+'>, <Op.SUB: '-'>]\""],
     "functional", None),
]

EXPECTS_KEYERROR = ["try:\n    f()['z']\n    assert False\nexcept KeyError:\n    pass"]  # a missing key must raise

# (name, program, tests, helpers): wrong programs that exploit what the old design took from the candidate; all score 0
FORGED = [
    ("encode_cyclic forged, identity decode", "def encode_cyclic(s):\n    return s\ndef decode_cyclic(s):\n    return s",
     [CYCLIC_TEST], prompt_helpers(CYCLIC_PROMPT, "decode_cyclic")),
    ("encode_shift forged, identity decode", "def encode_shift(s):\n    return s\ndef decode_shift(s):\n    return s",
     [SHIFT_TEST], prompt_helpers(SHIFT_PROMPT, "decode_shift")),
    ("poly forged to 0", "def poly(xs, x):\n    return 0\ndef find_zero(xs):\n    return 12345.0", [POLY_TEST],
     prompt_helpers(POLY_PROMPT, "find_zero")),
    ("OrderedDict in the wrong order", "from collections import OrderedDict\ndef f(): return OrderedDict([('b', 1), ('a', 2)])",
     ["from collections import OrderedDict\nassert f() == OrderedDict([('a', 2), ('b', 1)])"], None),
    ("deque compared with a list", "from collections import deque\ndef f(): return deque([1, 2])", ["assert f() == [1, 2]"], None),
    ("namedtuple taken for a tuple", "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f(): return P(1, 2)",
     ["assert type(f()) is tuple"], None),
    ("Counter taken for a dict", "from collections import Counter\ndef f(): return Counter('ab')", ["assert type(f()) is dict"], None),
    ("a list subclass equal to everything", "class L(list):\n    def __eq__(self, o): return True\ndef f(): return L()",
     ["assert f() == [1, 2]"], None),
    ("an argument left unsorted", "def sort_in_place(a):\n    return sorted(a)", ["a = [3, 1, 2]\nsort_in_place(a)\nassert a == [1, 2, 3]"], None),
    ("a copy, not the argument", "def push(stack, x):\n    return stack + [x]", ["s = [1]\nassert push(s, 2) is s"], None),
    ("StopIteration to end the test's loop", "def f(x):\n    raise StopIteration", ["assert all(f(x) == 1 for x in [1, 2])"], None),
    # plain Python's recursion limit (issue 50, item 2): 3,000 calls deep raise RecursionError under Python's default
    ("a recursion plain Python refuses", "def depth(n): return 0 if n == 0 else 1 + depth(n - 1)",
     ["assert depth(3_000) == 3_000"], None),
    ("a KeyError taken for a ValueError", "def f(d): return d['x']", ["try:\n    f({})\nexcept ValueError:\n    pass"], None),
    ("a generator read to its end, which raises", "def gen():\n    yield 1\n    raise ValueError('past the end')",
     ["assert list(gen()) == [1]"], None),
    ("a keyword argument left as it was", "def fill(n, out=None):\n    return list(range(n))",
     ["buf = []\nfill(3, out=buf)\nassert buf == [0, 1, 2]"], None),    ("an object equal to everything, against the test's value", "class A:\n    def __eq__(self, other):\n        return True\n"
     "def f():\n    return A()", ["assert f() == 3", "assert [1] == f()"], None),
    ("an array.array taken for a list", "import array\ndef f():\n    return array.array('i', [1, 2])", ["assert f() == [1, 2]"], None),
    ("a linked list one node short", "class Node:\n    def __init__(self, val, nxt=None):\n        self.val, self.next = val, nxt\n"
     "def build(xs):\n    return Node(xs[0]) if xs else None",
     ["n = build([1, 2])\nout = []\nwhile n is not None:\n    out.append(n.val)\n    n = n.next\nassert out == [1, 2]"], None),
    ("a dict subclass equal to everything", "class D(dict):\n    def __eq__(self, o):\n        return True\ndef f():\n    return D()",
     ["assert f() == {'a': 1}", "assert {'a': 1} == f()"], None),
    ("a str subclass whose str() claims the answer, compared by value", "class S(str):\n    def __eq__(self, o):\n"
     "        return True\n    __hash__ = str.__hash__\ndef f():\n    return S('wrong')", ["assert f() == 'right'"], None),
    ("an empty list broadcast against a nested float result", "def f():\n    return [[]]",
     ["import numpy as np\nassert np.allclose(f(), [[3.5]], rtol=1e-07, atol=1e-6)"], None),    # a subclass of a built-in whose own methods or state a copy would lose (review of issue 50)
    ("a list subclass whose method forgets to change it", "class Stack(list):\n    def push(self, x):\n        self.append(x)\n"
     "    def clear_all(self):\n        pass\ndef make():\n    return Stack()", ["s = make()\ns.push(1)\ns.clear_all()\nassert s == []"], None),
    ("a list subclass whose append does nothing", "class SortedList(list):\n    def append(self, x):\n        pass\n"
     "def make():\n    return SortedList()", ["s = make()\ns.append(1)\nassert s == [1]"], None),
    ("a str subclass whose comparisons are wrong", "class Version(str):\n    def __lt__(self, o):\n        return False\n"
     "    def __gt__(self, o):\n        return False\ndef v(s):\n    return Version(s)",
     ["assert v('1.0') < v('2.0')", "assert max([v('1.0'), v('2.0')]) == '2.0'"], None),
    ("a str subclass equal to nothing", "class CI(str):\n    def __eq__(self, o):\n        return False\n    __hash__ = str.__hash__\n"
     "def norm(s):\n    return CI(s)", ["assert norm('abc') == 'abc'"], None),
    ("a str subclass with its own repr in a list", "class Card(str):\n    def __repr__(self):\n        return 'Card?'\n"
     "def hand():\n    return [Card('A'), Card('K')]", ["assert str(hand()) == \"['A', 'K']\""], None),
    ("an OrderedDict subclass in the wrong order", "from collections import OrderedDict\nclass LRU(OrderedDict):\n    pass\n"
     "def f():\n    return LRU([('b', 1), ('a', 2)])", ["from collections import OrderedDict\nassert f() == OrderedDict([('a', 2), ('b', 1)])"], None),
    ("an array whose __class__ claims bytes", "import array\nclass A(array.array):\n    __class__ = property(lambda s: bytes)\n"
     "def f():\n    return A('b', b'right')", ["assert f() == b'right'"], None),
    ("a tuple subclass with _fields and its own properties", "class P(tuple):\n    _fields = ('x', 'y')\n"
     "    x = property(lambda s: tuple.__getitem__(s, 1))\n    y = property(lambda s: tuple.__getitem__(s, 0))\n"
     "def f():\n    return P((1, 2))", ["p = f()\nassert p.x == 1 and p.y == 2"], None),
    ("a live view where a snapshot was asked for", "def snapshot_keys(d):\n    return d.keys()",
     ["d = {'a': 1}\nk = snapshot_keys(d)\nd['b'] = 2\nassert k == {'a'}"], None),
    ("a dict subclass with __missing__ where a KeyError is expected", "class D(dict):\n    def __missing__(self, k):\n"
     "        return 0\ndef f():\n    return D()", EXPECTS_KEYERROR, None),    # second hostile review: metaclasses, mixins, dunders and instance attributes that a copy would lose
    ("a class whose __bool__ is None", "class Verdict:\n    __bool__ = None\ndef is_prime(n):\n    return Verdict()",
     ["assert is_prime(7)"], None),
    ("a numpy float subclass whose item() lies", "import numpy as np\nclass F(np.float64):\n    def item(self):\n        return 42.0\n"
     "def f():\n    return F(1.0)", ["assert f() == 42.0"], None),
    ("a metaclass that hides a str subclass's __eq__", "class M(type):\n    __dict__ = property(lambda c: {})\n"
     "class CI(str, metaclass=M):\n    def __eq__(self, o):\n        return False\n    __hash__ = str.__hash__\ndef norm(s):\n    return CI(s)",
     ["assert norm('abc') == 'abc'"], None),
    ("__missing__ from a mixin after dict", "class Zero:\n    def __missing__(self, k):\n        return 0\nclass D(dict, Zero):\n    pass\n"
     "def f():\n    return D()", EXPECTS_KEYERROR, None),
    ("a list subclass that is false", "class L(list):\n    def __bool__(self):\n        return False\ndef f():\n    return L([1])",
     ["assert f()"], None),
    ("an instance attribute shadowing dict.get", "class D(dict):\n    def __init__(self, *a):\n        super().__init__(*a)\n"
     "        self.get = lambda k, d=None: 'wrong'\ndef f():\n    return D({'a': 1})", ["assert f().get('a') == 1"], None),
    ("an IntEnum equal to nothing", "from enum import IntEnum\nclass E(IntEnum):\n    A = 1\n    def __eq__(self, o):\n        return False\n"
     "    __hash__ = int.__hash__\ndef f():\n    return E.A", ["assert f() == 1"], None),
    ("a view of a dict subclass whose __contains__ lies", "class D(dict):\n    def __contains__(self, k):\n        return True\n"
     "def keys_of(d):\n    return D().keys()", ["assert keys_of({'a': 1, 'b': 2}) == {'a', 'b'}"], None),    ("a metaclass that shows a namedtuple's __dict__ and __bases__", "import collections\n"
     "_fake = dict(vars(collections.namedtuple('P', 'x y')))\nclass M(type):\n    __dict__ = property(lambda c: _fake)\n"
     "    __bases__ = property(lambda c: (tuple,))\nclass P(tuple, metaclass=M):\n    _fields = ('x', 'y')\n"
     "    x = property(lambda s: tuple.__getitem__(s, 1))\n    y = property(lambda s: tuple.__getitem__(s, 0))\n"
     "def f():\n    return P((1, 2))", ["p = f()\nassert p.x == 1 and p.y == 2"], None),
]


@needs_sandbox
def test_benign_corpus_scores_one_five_times_in_a_row():
    for n in range(5):
        by_mode = {}
        for name, code, tests, mode, helpers in BENIGN:
            by_mode.setdefault(mode, []).append((name, code, tests, helpers))
        for mode, rows in by_mode.items():
            scores = code_reward([c for _, c, _, _ in rows], [t for _, _, t, _ in rows], test_mode=[mode] * len(rows),
                                 helpers=[h for *_, h in rows], timeout_s=30, batch_budget_s=600, workers=4)
            failed = [name for (name, *_), s in zip(rows, scores) if s != 1.0]
            assert not failed, f"repeat {n}: correct programs scored 0: {failed}"


@needs_sandbox
@pytest.mark.parametrize("name, code, tests, helpers", FORGED, ids=[f[0] for f in FORGED])
def test_forged_pass_scores_zero(name, code, tests, helpers):
    assert run_tests_sandboxed(code, tests, helpers=helpers, timeout_s=10).passed == 0, name


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@needs_sandbox
@pytest.mark.parametrize("code, test", [
    ("def f(x): return 10**12", "assert sum(range(f(1))) == 0"),  # the test's own loop, over a returned value
    ("def f():\n    return [((2**61 - 1) * i, 0) for i in range(2_000)]", "assert len(set(f())) == 0"),  # equal hashes
    ("def f():\n    return {(2**61 - 1) * i for i in range(70_000)}", "assert f() == {3}"),  # rebuilt from the reply
    ("import json\njson.dumps = lambda *a, **k: '{\"value\": ' + '[' * 10**6 + ']' * 10**6 + '}'\ndef f(): return 1",
     "assert f() == 1"),  # a forged reply nested a million deep
])
def test_the_tests_own_work_costs_the_trainer_nothing(code, test):
    t0, c0 = time.monotonic(), _cpu()
    r = run_tests_sandboxed(code, [test], timeout_s=3)
    wall, cpu = time.monotonic() - t0, _cpu() - c0
    assert r.passed == 0
    assert wall < 4.5, f"{wall:.1f} s"
    assert cpu < 0.1, f"the trainer spent {cpu:.3f} s of CPU"


@needs_sandbox
def test_trainer_cpu_per_completion_is_under_a_tenth_of_a_second():
    codes = ["def add(a, b): return a + b", "def add(a, b):\n    while True: pass", "def add(a, b): return [0] * 10**6"]
    tests = ["assert add(1, 2) == 3", "assert set(range(add(10**5, 0))) is not None"]
    c0 = _cpu()
    scores = code_reward(codes * 4, [tests] * 12, timeout_s=2, workers=4)
    per = (_cpu() - c0) / 12
    assert scores == [1.0, 0.0, 0.0] * 4
    assert per < 0.1, f"{per:.3f} s of the trainer's CPU per completion"


MEMFD = ("import os\nfds, err = [], None\ntry:\n    for i in range(128):\n        fd = os.memfd_create('m%d' % i)\n"
         "        for _ in range(16):\n            os.write(fd, b'x' * (1 << 20))\n        fds.append(fd)\nexcept OSError as e:\n"
         "    err = type(e).__name__\ndef held(): return (len(fds) * 16, err)")
SHMGET = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nids = [libc.shmget(0, 16 << 20, 0o1600) for _ in range(128)]\n"
          "def held(): return (sum(i >= 0 for i in ids) * 16, ctypes.get_errno())")


@needs_sandbox
def test_memory_no_process_owns_is_refused():
    # 128 memfd files of 16 MiB held 2 GiB under a 1 GiB RLIMIT_AS before issue 40: now memfd_create itself fails
    assert run_tests_sandboxed(MEMFD, ["assert held() == (0, 'PermissionError')"], mem_mb=1024) == (1, 1)
    assert run_tests_sandboxed(MEMFD, ["assert held()[0] >= 1024"], mem_mb=1024) == (0, 1)
    assert run_tests_sandboxed(SHMGET, ["assert held() == (0, 1)"], mem_mb=1024) == (1, 1)  # EPERM
    assert "seccomp" in memory_bound() and "memory:" in sandbox_status()[1]


def test_prompt_helpers_are_the_prompts_own_functions():
    h = prompt_helpers(POLY_PROMPT, "find_zero")
    assert "def poly" in h and "import math" in h and "find_zero" not in h
    assert prompt_helpers("not python (", "f") == ""
    with pytest.raises(ValueError, match="entry_point"):
        prompt_helpers("def f(): pass", "f x")
    with pytest.raises(ValueError, match="helpers"):
        run_tests_sandboxed("def f(): pass", ["assert f() is None"], helpers="def (")


@needs_sandbox
def test_a_correct_completion_is_scored_whatever_slow_ones_came_before_it():
    # issue 40: 96 time-outs, then a correct program, scored 0.0 at the batch budget; now every completion gets a
    # first slice within about half the budget, so the correct one at the end of the batch is graded
    busy, right = "def add(a, b):\n    while True: pass", "def add(a, b): return a + b"
    logged, t0 = {}, time.monotonic()
    scores = code_reward([busy] * 20 + [right], [["assert add(1, 2) == 3"]] * 21, timeout_s=4, batch_budget_s=14,
                         workers=2, log_metric=logged.__setitem__)
    assert scores == [0.0] * 20 + [1.0]  # before: 20 x 4 s / 2 workers = 40 s of busy programs spent the budget first
    assert time.monotonic() - t0 < 14 + 4
    assert logged["code/second_pass_frac"] == 20 / 21


def test_a_fence_inside_a_string_literal_does_not_cut_the_program():
    from delta_repro.rewards import extract_code
    f = "```"
    assert extract_code(f"{f}python\ndef fence():\n    return '{f}'\n{f}\nDone.") == f"def fence():\n    return '{f}'\n"
    # a block closed inside a line, then another block: as before, each block ends at its first fence
    assert extract_code(f"{f}python\nx = 1{f}\ntext\n{f}python\ny = 2\n{f}") == "y = 2\n"
    assert extract_code(f"{f}python\nx = 1{f}\ntext") == "x = 1"


@needs_sandbox
def test_a_sandbox_whose_memory_filter_does_not_load_is_not_available(monkeypatch):
    # the probe runs with the seccomp filter every run gets and checks memfd_create is refused: a filter the kernel
    # rejects makes sandbox_status() say so, rather than every program silently scoring 0
    import delta_repro.sandbox as S
    assert S._probe.__wrapped__(S._bwrap_path(), S._python()) is None
    monkeypatch.setattr(S, "_seccomp_filter", lambda: b"\0" * 8)  # no return instruction: the kernel refuses it
    assert "failed" in S._probe.__wrapped__(S._bwrap_path(), S._python())
