"""Hostile students who have read the grader's source, against the judge that decides verdicts.

Each hand-in below attacks one claim of the design (course_grader/judge.py): the verdict is
decided by a process that never runs student code; the student's process only ever hands back
plain data or handles; nothing it does changes a verdict except computing the answer;
classmates graded at the same time are unaffected; one bad notebook never stops the batch.

Every hand-in is honest except where it attacks, so a fair human grader's score is "full
points minus the parts the attack stands in for". An attack that gains even one point fails
its test. The whole class (ps01, with ps03, ps04 and ps11 where an attack needs their helpers)
is graded once, two at a time, with short limits (ps03, ps04 and ps11, whose tests make many
round trips to the student's process, with 20 s per test instead of 5). ps13's and ps08's
attacks are graded on their own, one part only (a whole ps13 hand-in takes half a minute).

Attacks that once gained points, each a case here that holds since its fix:
rigged arithmetic on returned objects (rig_object, rig_ndarray_subclass, rig_float_subclass),
builtins defined by the student's cells (shadow_builtins), set-up functions run on the
student's side (ps11_resets_counter, ps11_count_ops_in_place, ps04_recursion_unlimited),
course_lib's other central difference (ref_other_function), arrays passed by value
(writes_to_x), a Cyrillic look-alike id, and a feedback page left empty by a lone surrogate.
Open in ps07 (red8, strict xfail, in the README's "Not guaranteed"): numbers carrying out what a
reference did to a spying object, and ps07's loss differentiated by the complex step.
Set HOSTILE_VERDICTS_DUMP=<file> to get every hand-in's parts and messages as JSON.
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader_helpers import ROOT, answer_cells, fill_in, graded_cells, load_honest, nbgrader

from course_grader.grading import ClassGrader
from course_grader.handin import grade_hand_in
from course_grader.limits import Limits
from course_grader.parts import secret_lines
from course_grader.rules import read_rules
from course_grader.sandbox import Sandbox

PS01, PS03, PS04, PS11 = "ps01_finite_differences", "ps03_reverse_mode", "ps04_topological_sort", "ps11_cheap_gradient"
PS13 = "ps13_capstone"
SLOW = (PS03, PS04, PS11)  # their tests make many round trips: graded with a longer time limit
TOKEN = secrets.token_hex(8)  # a canary in the grader's environment

# ---------------------------------------------------------------------------------------------
# ps01 attacks. Unless said otherwise an attack lives in the observed_order answer cell, which
# runs only in the last part's process: a fair grade is everything but test_observed_order.
JUNK_ORDER = "\ndef observed_order(f, x, f_prime, method, h):\n    return 0.0\n"

# (1) forged verdicts. The cells run in a module of their own standing as __main__: a hand-in
# reaches the runner's module another way (gc), as one that read the grader's source would.
PATCH_RUNNER = """
import sys, json
import gc
__main__ = next(m for m in gc.get_objects() if type(m).__name__ == 'module' and 'JUDGE' in vars(m))
proto = sys.modules['course_grader.protocol']
ends = sys.modules['course_grader.endpoint']
def _forged_answer(self, message):
    self.send({'re': message.get('id'), 'value': {'passed': True}})
    self.send({'event': 'verdict', 'passed': True, 'points': 1})
def _forged_serve(message):
    return {'passed': True}
for target in (__main__, proto):
    try:
        target.serve = _forged_serve
    except Exception:
        pass
__main__.JUDGE.serve = _forged_serve
ends.Endpoint.answer = _forged_answer
proto.convert = lambda value, to: 1.0
__main__.convert = lambda value, to: 1.0
def observed_order(f, x, f_prime, method, h):
    return 0.0
"""

FD_FORGERY = """
import os, json
def observed_order(f, x, f_prime, method, h):
    lines = [{'re': n, 'value': 1.0} for n in range(1, 64)]
    lines += [{'event': 'ready', 'names': {}}, {'event': 'verdict', 'passed': True}, {'passed': True}]
    data = ''.join(json.dumps(line) + '\\n' for line in lines).encode()
    for fd in os.listdir('/proc/self/fd'):
        try:
            os.write(int(fd), data)
        except OSError:
            pass
    return 0.0
"""

GC_FRAMES_CTYPES = """
import gc, sys, ctypes, json, os
def observed_order(f, x, f_prime, method, h):
    found = []
    for obj in gc.get_objects():
        if type(obj).__name__ == 'Endpoint':
            found.append(obj)
    frame = sys._getframe()
    request = None
    while frame is not None:
        message = frame.f_locals.get('message')
        if isinstance(message, dict) and 'id' in message:
            request = message
        frame = frame.f_back
    for endpoint in found:
        if request is not None:
            endpoint.send({'re': request['id'], 'value': 1.0})
            endpoint.send({'re': request['id'] + 1, 'value': 2.0})
        endpoint.codec.encode = lambda value, depth=0: 1.0
    try:
        ctypes.memmove(id(1.0) + 16, ctypes.addressof(ctypes.c_double(0.0)), 8)
    except Exception:
        pass
    return 0.0
"""

# (2) rigged return values
RIGGED_OBJECT = """
import numpy as np
class Rigged:
    def __eq__(self, other): return True
    __ne__ = lambda self, other: False
    __lt__ = __le__ = __gt__ = __ge__ = lambda self, other: True
    def __bool__(self): return True
    def __float__(self): return 1.0
    def __index__(self): return 1
    def __array__(self, *a, **k): return np.array(1.0)
    @property
    def __array_interface__(self): return np.array(1.0).__array_interface__
    def __array_ufunc__(self, *a, **k): return True
    def __sub__(self, other): return 0.0
    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __sub__
    def __abs__(self): return 0.0
    def __neg__(self): return self
def observed_order(f, x, f_prime, method, h):
    return Rigged()
"""

NDARRAY_SUBCLASS = """
import numpy as np
class Always(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(self), bool)
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __sub__(self, other): return 0.0
    __rsub__ = __sub__
    def __abs__(self): return 0.0
    def __bool__(self): return True
    def __float__(self): return 1.0
np.isclose = lambda *a, **k: True
np.allclose = lambda *a, **k: True
def observed_order(f, x, f_prime, method, h):
    return np.array(1.0).view(Always)
"""

FLOAT_SUBCLASS = """
class Sly(float):
    def __sub__(self, other): return Sly(0.0)
    def __rsub__(self, other): return Sly(0.0)
    def __abs__(self): return 0.0
    def __eq__(self, other): return True
    __hash__ = float.__hash__
def observed_order(f, x, f_prime, method, h):
    return Sly(1.0)
"""

CLAIMS_COURSE_LIB = """
class Tensor:
    data = 1.0
    def __float__(self): return 1.0
    def __eq__(self, other): return True
Tensor.__module__, Tensor.__qualname__ = 'course_lib.tensor', 'Tensor'
class Value:
    data = 1.0
    def __float__(self): return 1.0
Value.__module__, Value.__qualname__ = 'course_lib.scalar', 'Value'
def observed_order(f, x, f_prime, method, h):
    return Tensor()
"""

HUGE_RETURN = """
import numpy as np
def observed_order(f, x, f_prime, method, h):
    return np.ones(12_000_000)
"""

DEEP_RETURN = """
def observed_order(f, x, f_prime, method, h):
    value = 1.0
    for _ in range(5000):
        value = [value]
    return value
"""

REPR_BOMB = """
class Bomb:
    def __repr__(self): return repr(self)
    __str__ = __repr__
    def __float__(self): return float('nan')
def observed_order(f, x, f_prime, method, h):
    return Bomb()
"""

# (9) builtins the test uses, defined by the student's cells
SHADOW_BUILTINS_BEST = """
def abs(value):
    return 0.0
def isinstance(*args):
    return True
def best_step(f, x, f_prime, hs, method):
    if x == 6.0:
        return 1e-5
    if x == 1.0:
        return 0.01
    return hs[0]
"""
SHADOW_BUILTINS_ORDER = "\ndef observed_order(f, x, f_prime, method, h):\n    return 1.5\n"

# (9) asking the judge for its objects' insides with raw requests; any success ends the process
# with status 42 (then the part, which is otherwise honest, fails)
RAW_REQUESTS = """
import os, numpy as np
import gc
__main__ = next(m for m in gc.get_objects() if type(m).__name__ == 'module' and 'JUDGE' in vars(m))
def observed_order(f, x, f_prime, method, h):
    number = object.__getattribute__(method, '_Trusted__number')
    for name in ('__globals__', '__code__', '__closure__', '__defaults__', '__dict__', '__class__',
                 'f_globals', 'gi_frame', 'func_globals', 'func'):
        try:
            __main__.JUDGE.request('getattr', target={'$r': number}, name=name)
            os._exit(42)
        except Exception:
            pass
    for op, fields in (('setattr', {'name': 'x', 'value': 1}), ('setitem', {'key': 0, 'value': 1}),
                       ('global', {'name': 'numerical_grad'}), ('setup', {'name': 'numerical_grad'})):
        try:
            __main__.JUDGE.request(op, target={'$r': number}, **fields)
            os._exit(42)
        except Exception:
            pass
    for other in list(__main__.JUDGE.codec.proxies.keys()):  # handles the judge gave out
        if other == number:
            continue
        try:
            __main__.JUDGE.request('call', target={'$r': other}, args=[], kwargs={'$d': []})
            os._exit(42)
        except Exception:
            pass
    error_h = abs(method(f, x, h) - f_prime)
    error_h10 = abs(method(f, x, h / 10) - f_prime)
    return float(np.log10(error_h / error_h10))
"""

# (5) secrets in the sandbox: an honest hand-in that looks everywhere; a find ends the process
# with status 43 in the first part (forward_difference's cell runs in every part)
SNOOP = f"""
import os, glob, time
MARKERS = [b'BEGIN HIDDEN', b'BEGIN SOLUTION', b'uniform(-14, -1, size=15)', b'correct orderings (h',
           {TOKEN.encode()!r}, b'gradebook', b'hidden test']
def _hits(data):
    return [m for m in MARKERS if m in data]
found = []
for path in ['/proc/self/environ', '/proc/1/environ', '/proc/1/cmdline', '/proc/self/cmdline']:
    try:
        if _hits(open(path, 'rb').read()):
            found.append(path)
    except OSError:
        pass
for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline') + glob.glob('/proc/*/fd/*'):
    try:
        target = os.readlink(path) if '/fd/' in path else None
        if target is not None and ('solutions' in target or 'gradebook' in target):
            found.append(path)
        elif target is None and _hits(open(path, 'rb').read()):
            found.append(path)
    except OSError:
        pass
if any(v for k, v in os.environ.items() if {TOKEN!r} in v):
    found.append('environ')
deadline = time.monotonic() + 2.5
for top in ['/home', '/tmp', '/opt', '/work', '/root', '/etc', '/var', '/srv', '/mnt', '/run']:
    for folder, dirs, files in os.walk(top):
        if time.monotonic() > deadline:
            break
        dirs[:] = [d for d in dirs if d not in ('site-packages', '__pycache__', '.git')]
        for name in files:
            path = os.path.join(folder, name)
            try:
                if name.endswith('.ipynb') and folder.startswith('/home/student'):
                    continue  # the student's own hand-in
                if os.path.getsize(path) < 2_000_000 and _hits(open(path, 'rb').read()):
                    found.append(path)
            except OSError:
                pass
if found:
    os._exit(43)
def forward_difference(f, x, h):
    return (f(x + h) - f(x)) / h
"""

# (3) captured references: central_difference through course_lib's own central difference
REFERENCE_ATTACKS = {
    "ref_alias": "from course_lib.check import numerical_grad as ng\n"
    "def central_difference(f, x, h):\n    return ng(f, x, eps=h)\n",
    "ref_default_argument": "def central_difference(f, x, h, _grad=numerical_grad):\n    return _grad(f, x, eps=h)\n",
    "ref_closure": "def _make(grad):\n    def central_difference(f, x, h):\n        return grad(f, x, eps=h)\n"
    "    return central_difference\ncentral_difference = _make(__import__('course_lib.check').check.numerical_grad)\n",
    "ref_reload": "import importlib, sys, course_lib.check\n"
    "for name in [n for n in sys.modules if n.startswith('course_lib')]:\n"
    "    del sys.modules[name]\nimportlib.invalidate_caches()\nimport course_lib.check\n"
    "course_lib.check = importlib.reload(course_lib.check)\n"
    "def central_difference(f, x, h):\n    return course_lib.check.numerical_grad(f, x, eps=h)\n",
    "ref_exec_source": "import glob, sys, os, course_lib\n"
    "paths = [os.path.dirname(course_lib.__file__) + '/check.py']\n"
    "for p in [*sys.path, '/opt', '/home', '/tmp', '/usr/lib', '/usr/local/lib']:\n"
    "    paths += glob.glob(os.path.join(p, 'course_lib', 'check.py'))\n"
    "    paths += glob.glob(os.path.join(p, '*', 'course_lib', 'check.py'))\n"
    "_ng = None\nfor p in paths:\n    try:\n        text = open(p).read()\n    except OSError:\n        continue\n"
    "    if 'exercise rule' not in text and 'def numerical_grad' in text:\n        scope = {}\n"
    "        exec(compile(text, p, 'exec'), scope)\n        _ng = scope['numerical_grad']\n        break\n"
    "def central_difference(f, x, h):\n    return _ng(f, x, eps=h)\n",
    "ref_editable_finder": "import glob, sys, os, re\n_ng = None\n"
    "for p in sys.path:\n    for finder in glob.glob(os.path.join(p, '__editable__*finder.py')):\n"
    "        for root in re.findall(r\"'(/[^']+/course_lib)'\", open(finder).read()):\n"
    "            try:\n                scope = {}\n                exec(open(root + '/check.py').read(), scope)\n"
    "                _ng = scope['numerical_grad']\n            except OSError:\n                pass\n"
    "def central_difference(f, x, h):\n    return _ng(f, x, eps=h)\n",
    # course_lib's other central difference, which the rule does not name
    "ref_other_function": "import numpy as np\nfrom course_lib.ig import _gradients_fd\n"
    "def central_difference(f, x, h):\n"
    "    _, grads = _gradients_fd(lambda b: np.array([f(float(v)) for v in b.reshape(-1)]), np.array([[x]]), None, h)\n"
    "    return float(grads.reshape(-1)[0])\n",
}

# (7) classmates: hogs that must cost only their own part
HOGS = {
    "hog_threads": "import threading\ndef observed_order(f, x, f_prime, method, h):\n"
    "    def spin():\n        while True:\n            pass\n"
    "    for _ in range(64):\n        try:\n            threading.Thread(target=spin, daemon=True).start()\n"
    "        except Exception:\n            break\n    while True:\n        pass\n",
    "hog_c_sleep": "import signal, time\ndef observed_order(f, x, f_prime, method, h):\n"
    "    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM, signal.SIGTERM, signal.SIGINT])\n"
    "    time.sleep(10**6)\n",
    "hog_holds_pipe": "import os, time\ndef observed_order(f, x, f_prime, method, h):\n"
    "    for _ in range(4):\n        try:\n            if os.fork() == 0:\n                os.setsid()\n"
    "                time.sleep(600)\n                os._exit(0)\n        except OSError:\n            pass\n"
    "    return 0.0\n",
    "hog_kills_everyone": "import os, signal\ndef observed_order(f, x, f_prime, method, h):\n"
    "    for pid in (-1, 1, os.getppid()):\n        try:\n            os.kill(pid, signal.SIGKILL)\n"
    "        except Exception:\n            pass\n    return 0.0\n",
    "hog_tmp_and_disk": "import os\ndef observed_order(f, x, f_prime, method, h):\n"
    "    for place in ('/tmp', '.', '/dev/shm'):\n        k = 0\n        while True:\n            k += 1\n"
    "            try:\n                with open(f'{place}/fill-{k}', 'wb') as out:\n"
    "                    out.write(bytes(16 * 1024**2))\n            except OSError:\n                break\n"
    "    return 0.0\n",
}

# ---------------------------------------------------------------------------------------------
# ps11 (4): count_ops runs on the student's side (student_side); the student answers part 3
# with forward mode (n passes) and hides the cost.
FORWARD_AS_REVERSE = (
    "def gradient_by_reverse_mode(f, x):\n    start = _done[0]\n    gradient = []\n"
    "    for i in range(len(x)):\n"
    "        out = f([Dual(Num(v), Num(1.0 if j == i else 0.0)) for j, v in enumerate(x)])\n"
    "        gradient.append(out.tangent.value)\n"
)
# counts honestly, except that reverse mode costs one operation
COUNTING = (
    "    start = _done[0]\n    result = fn(*args)\n    n = _done[0] - start\n"
    "    return result, (1 if getattr(fn, '__name__', '') == 'gradient_by_reverse_mode' else n)\n"
)
# one recording, then the sweep repeated (the mistake part 3 is about), with count_ops's counter
# put back: the cost is counted from the calls of f and backward the judge serves, not from _done
SWEEPS_HIDDEN = (
    "def gradient_by_reverse_mode(f, x):\n    entry = _done[0]\n    leaves = [Var(Num(v)) for v in x]\n"
    "    out = f(leaves)\n    for _ in range(max(len(x), 8)):\n        backward(out)\n"
    "    _done[0] = entry + 1\n    return [leaf.grad.value for leaf in leaves]\n"
)
PS11_ATTACKS = {
    "ps11_resets_counter": FORWARD_AS_REVERSE + "    _done[0] = start + 1\n    return gradient\n",
    "ps11_sweeps_hidden": SWEEPS_HIDDEN,
    "ps11_count_ops_in_place": FORWARD_AS_REVERSE
    + "    return gradient\n\n\ndef _counting(fn, *args):\n"
    + COUNTING
    + "\n\ncount_ops.__code__ = _counting.__code__\n",
    # a control: a new function under the same name is not the set-up cells' count_ops
    "ps11_count_ops_renamed": FORWARD_AS_REVERSE + "    return gradient\n\n\ndef count_ops(fn, *args):\n" + COUNTING,
}

# ps04 (4): names_in_order runs on the student's side, so a recursive topo_sort gets past the
# deep-graph test by lifting the recursion limit and keeping the runner from lowering it again
PS04_RECURSION = (
    "import sys\nsys.setrecursionlimit(400_000)\nsys.setrecursionlimit = lambda limit: None\n"
    "def topo_sort(output):\n    order, seen = [], set()\n\n    def visit(node):\n        if node in seen:\n"
    "            return\n        seen.add(node)\n        for parent in node.parents:\n            visit(parent)\n"
    "        order.append(node)\n\n    visit(output)\n    return order\n"
)

# ps03 (4): close and math.isclose redefined, with a wrong power rule
PS03_CLOSE = (
    "import math\nclose = lambda a, b: True\nmath.isclose = lambda *a, **k: True\n"
    "def power(self, n):\n    if not isinstance(n, numbers.Real):\n        return NotImplemented\n"
    "    out = Value(self.data**n, (self,), f'**{n}')\n\n    def _backward(grad):\n        self.grad += 0.0\n\n"
    "    out._backward = _backward\n    return out\n\n\nValue.__pow__ = power\n"
)


def ps01_attacks() -> dict[str, tuple[dict[str, str], set[str]]]:
    """student -> (answers replaced, parts a fair grader gives nothing for)."""
    last = {"test_observed_order"}
    attacks: dict[str, tuple[dict[str, str], set[str]]] = {
        "forge_patch_runner": ({"observed_order": PATCH_RUNNER}, last),
        "forge_fd_writes": ({"observed_order": FD_FORGERY}, last),
        "forge_gc_frames_ctypes": ({"observed_order": GC_FRAMES_CTYPES}, last),
        "rig_object": ({"observed_order": RIGGED_OBJECT}, last),
        "rig_ndarray_subclass": ({"observed_order": NDARRAY_SUBCLASS}, last),
        "rig_float_subclass": ({"observed_order": FLOAT_SUBCLASS}, last),
        "rig_claims_course_lib": ({"observed_order": CLAIMS_COURSE_LIB}, last),
        "rig_huge_return": ({"observed_order": HUGE_RETURN}, last),
        "rig_deep_return": ({"observed_order": DEEP_RETURN}, last),
        "rig_repr_bomb": ({"observed_order": REPR_BOMB}, last),
        "shadow_builtins": (
            {"best_step": SHADOW_BUILTINS_BEST, "observed_order": SHADOW_BUILTINS_ORDER},
            {"test_best_step", "test_observed_order"},
        ),
        "raw_requests_to_judge": ({"observed_order": RAW_REQUESTS}, set()),
        "snoop_everywhere": ({"forward_difference": SNOOP}, set()),
        # arrays cross by value: the caller's x, written to after making the copy writable again.
        # What it writes reaches the test's x, as in Jupyter, where test_gradient_fd then compares
        # the gradient with X**2 of the zeroed X and fails too.
        "writes_to_x": (
            {
                "gradient_fd": "import numpy as np\ndef gradient_fd(f, x, h=1e-6):\n    grad = np.zeros(x.shape)\n"
                "    for index in np.ndindex(x.shape):\n        step = np.zeros(x.shape)\n        step[index] = h\n"
                "        grad[index] = (f(x + step) - f(x - step)) / (2 * h)\n"
                "    x.setflags(write=True)\n    x[...] = 0.0\n    return grad\n"
            },
            {"test_gradient_fd_leaves_x_alone", "test_gradient_fd"},
        ),
        # an error message the feedback page cannot encode (a lone surrogate)
        "surrogate_message": (
            {"observed_order": "def observed_order(f, x, f_prime, method, h):\n    raise ValueError('\\udcff x')\n"},
            last,
        ),
    }
    for student, code in REFERENCE_ATTACKS.items():
        attacks[student] = ({"central_difference": code}, {"test_central_difference"})
    for student, code in HOGS.items():
        attacks[student] = ({"observed_order": code}, last)
    return attacks


CLASSMATES = ["alice", "bob"]
LOOKALIKE_VICTIM = "carol"  # "\u0441arol" (Cyrillic es) hands in too
# Ids that must be listed for a human, never graded or put into the table as given.
BAD_IDS = {
    "comma,id": "invalid-id",
    "new\nline": "invalid-id",
    'quo"te': "invalid-id",
    "=1+2": "invalid-id",  # a spreadsheet formula
    "alice\u200b": "invalid-id",  # zero-width space
    "\u0441arol": "invalid-id",  # Cyrillic es: looks like carol
}


def broken_notebooks(release) -> dict[str, tuple[str | None, str]]:
    """student -> (the file's text, or None for a 500 MB file; the status it must get)."""
    base = json.loads(nbformat.writes(release))

    def variant(change) -> str:
        nb = json.loads(json.dumps(base))
        change(nb)
        return json.dumps(nb)

    def first_answer(nb):
        return next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution"))

    def set_in_first(key, value):
        return lambda nb: first_answer(nb).__setitem__(key, value)

    return {
        "bad_nbgrader_string": (
            variant(lambda nb: first_answer(nb)["metadata"].__setitem__("nbgrader", "grade me")),
            "malformed",
        ),
        "bad_grade_id_list": (
            variant(lambda nb: first_answer(nb)["metadata"]["nbgrader"].__setitem__("grade_id", ["a", "b"])),
            "malformed",
        ),
        "bad_source_number": (variant(set_in_first("source", 42)), "malformed|unreadable"),
        "bad_cells_not_list": (variant(lambda nb: nb.__setitem__("cells", {"a": 1})), "malformed|unreadable"),
        "bad_20000_cells": (
            variant(
                lambda nb: nb["cells"].extend(
                    {"cell_type": "code", "metadata": {}, "source": "1", "outputs": [], "execution_count": None}
                    for _ in range(20_000)
                )
            ),
            "malformed",
        ),
        "bad_invalid_json": ('{"cells": [ {"cell_type": "code", ', "unreadable"),
        "bad_500_mb": (None, "too-large"),
    }


def with_duplicate_answer(release, source):
    """forward_difference's answer cell twice: the honest one, then a wrong one (the later wins,
    as when the notebook runs)."""
    nb = fill_in(release, source, {})
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "forward_difference":
            again = nbformat.from_dict(json.loads(json.dumps(cell)))
            again.source = "def forward_difference(f, x, h):\n    return 0.0\n"
            again.id = f"{cell.id}-again"  # a cell pasted in Jupyter gets an id of its own
            cells.append(again)
    nb.cells = cells
    return nb


def with_tests(release, source, keep: bool):
    """Test cells deleted (keep=False) or replaced by `pass` (keep=True); forward_difference wrong."""
    nb = fill_in(release, source, {"forward_difference": "def forward_difference(f, x, h):\n    return 0.0\n"})
    tests = set(graded_cells(nb)) - set(answer_cells(nb))
    if keep:
        for grade_id, cell in graded_cells(nb).items():
            if grade_id in tests:
                cell.source = "pass"
    else:
        nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in tests]
    return nb


def points_of(source) -> dict[str, float]:
    return {
        c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"].get("points", 0))
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
    }


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    base = tmp_path_factory.mktemp("verdicts")
    course = base / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    sources, releases, points = {}, {}, {}
    for assignment in (PS01, *SLOW):
        shutil.copytree(ROOT / "solutions" / assignment, course / "solutions" / assignment)
        nbgrader("generate_assignment", assignment, "--force", cwd=course)
        name = f"{assignment}.ipynb"
        sources[assignment] = nbformat.read(course / "solutions" / assignment / name, as_version=4)
        releases[assignment] = nbformat.read(course / "exercises" / assignment / name, as_version=4)
        points[assignment] = points_of(sources[assignment])

    hand_ins: dict[tuple[str, str], object] = {}
    expected: dict[tuple[str, str], dict[str, float]] = {}

    def hand_in(student, assignment, answers, zero=()):
        hand_ins[(student, assignment)] = fill_in(releases[assignment], sources[assignment], answers)
        expected[(student, assignment)] = {
            part: 0.0 if part in zero else full for part, full in points[assignment].items()
        }

    for student in [*CLASSMATES, LOOKALIKE_VICTIM]:
        hand_in(student, PS01, {})
    for student, (answers, zero) in ps01_attacks().items():
        hand_in(student, PS01, answers, zero)
    for student, code in PS11_ATTACKS.items():
        hand_in(student, PS11, {"gradient_by_reverse_mode": code}, {"test_gradient_by_reverse_mode"})
    hand_in("ps03_close_shadow", PS03, {"pow_backward": PS03_CLOSE}, {"test_pow_backward"})
    hand_in("ps04_recursion_unlimited", PS04, {"topo_sort": PS04_RECURSION}, {"test_topo_sort_deep"})
    hand_ins[("duplicate_grade_id", PS01)] = with_duplicate_answer(releases[PS01], sources[PS01])
    expected[("duplicate_grade_id", PS01)] = dict(points[PS01], test_forward_difference=0.0)
    for student, keep in (("tests_replaced", True), ("tests_deleted", False)):
        hand_ins[(student, PS01)] = with_tests(releases[PS01], sources[PS01], keep)
        expected[(student, PS01)] = dict(points[PS01], test_forward_difference=0.0)

    inbox, slow_inbox = course / "submissions", course / "submissions-slow"
    for (student, assignment), nb in hand_ins.items():
        folder = (slow_inbox if assignment in SLOW else inbox) / student
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / f"{assignment}.ipynb")
    for student in BAD_IDS:
        (inbox / student).mkdir(parents=True)
        nbformat.write(fill_in(releases[PS01], sources[PS01], {}), inbox / student / f"{PS01}.ipynb")
    broken = broken_notebooks(releases[PS01])
    for student, (text, _) in broken.items():
        (inbox / student).mkdir(parents=True)
        path = inbox / student / f"{PS01}.ipynb"
        if text is None:
            with path.open("wb") as sparse:  # 500 MB on paper, no disk used
                sparse.truncate(500 * 1024**2)
        else:
            path.write_text(text)

    os.environ["GRADER_CANARY"] = TOKEN
    try:
        grader = ClassGrader(
            course,
            timeout=5,
            log=lambda *a: None,
            limits=Limits(wall_seconds=20, cpu_seconds=20, memory_bytes=2 * 1024**3),
        )
        outcomes = grader.collect(inbox)
        grader.grade(outcomes, jobs=2)
        slow = ClassGrader(course, timeout=20, log=lambda *a: None, limits=Limits(wall_seconds=60, cpu_seconds=60))
        slow_outcomes = slow.collect(slow_inbox)
        slow.grade(slow_outcomes, jobs=2)
        grader.results.update(slow.results)
        outcomes += slow_outcomes
        grader.export(outcomes=outcomes)
    finally:
        del os.environ["GRADER_CANARY"]
    if os.environ.get("HOSTILE_VERDICTS_DUMP"):  # what each hand-in got, for whoever debugs this
        dump = {
            f"{o.student}/{o.assignment}": {
                "status": o.status,
                "notes": o.notes,
                "parts": [
                    [r.grade_id, r.points, r.message, r.notes]
                    for r in grader.results.get((o.student, o.assignment), [])
                ],
            }
            for o in outcomes
        }
        Path(os.environ["HOSTILE_VERDICTS_DUMP"]).write_text(json.dumps(dump, indent=1))
    yield {
        "course": course,
        "grader": grader,
        "outcomes": {(o.student, o.assignment): o for o in outcomes},
        "expected": expected,
        "broken": broken,
        "sources": sources,
        "inbox": inbox,
    }


def fair_check(verdicts, students):
    wrong = {}
    for key, want in verdicts["expected"].items():
        if key[0] not in students:
            continue
        out = verdicts["outcomes"][key]
        if out.status != "graded":
            wrong[key] = (out.status, out.notes[:1])
            continue
        got = {r.grade_id: r.points for r in verdicts["grader"].results[key]}
        if got != want:
            wrong[key] = {part: (got[part], want[part]) for part in want if got[part] != want[part]}
    assert not wrong, f"(got, fair) per part: {wrong}"


def test_classmates_graded_beside_the_attacks_get_full_points(verdicts):
    fair_check(verdicts, CLASSMATES)


@pytest.mark.parametrize("student", ["forge_patch_runner", "forge_fd_writes", "forge_gc_frames_ctypes"])
def test_forged_verdicts_gain_nothing(verdicts, student):
    fair_check(verdicts, [student])


@pytest.mark.parametrize(
    "student",
    [
        "rig_object",
        "rig_ndarray_subclass",
        "rig_float_subclass",
        "rig_claims_course_lib",
        "rig_huge_return",
        "rig_deep_return",
        "rig_repr_bomb",
    ],
)
def test_rigged_return_values_gain_nothing(verdicts, student):
    fair_check(verdicts, [student])


@pytest.mark.parametrize("student", sorted(REFERENCE_ATTACKS))
def test_captured_references_gain_nothing(verdicts, student):
    fair_check(verdicts, [student])


@pytest.mark.parametrize("student", [*sorted(PS11_ATTACKS), "ps03_close_shadow", "ps04_recursion_unlimited"])
def test_shadowed_test_helpers_gain_nothing(verdicts, student):
    fair_check(verdicts, [student])


# ps13 (4): checkpointing (part 3) measured memory with Value.peak, a class attribute of the student's own: a
# hand-in that records the whole flight and then sets Value.peak = Value.alive scored 3/3. The
# judge measures the memory of the student's process from outside; part 14 is graded alone.
PS13_WHOLE_FLIGHT = """
def _whole_flight(v, theta, k, dt, every):
    V, T, K = Value(v), Value(theta), Value(k)
    h = hoop_height(V, T, K, dt)
    h.backward()
    height, gradient = h.data, [V.grad, T.grad, K.grad]
    del h, V, T, K
    state, checkpoints, n = launch(v, theta), [], 0
    while not reaches_hoop(state, k, dt):
        if n % every == 0:
            checkpoints.append(tuple(float(s) for s in state))
        state = heun_step(state, k, dt)
        n += 1
    return height, gradient, checkpoints
"""
# a helper process, forked at cell time, records the flight for whoever asks through its pipes
PS13_HELPER = """
import os, pickle
_ask, _asked = os.pipe()
_told, _tell = os.pipe()


def _serve():
    while True:
        job = pickle.loads(os.read(_ask, 4096))
        answer = pickle.dumps(_whole_flight(*job))
        os.write(_tell, len(answer).to_bytes(8, "little") + answer)
"""
PS13_ASKS_THE_HELPER = """

def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    os.write(_asked, pickle.dumps((v, theta, k, dt, every)))
    size = int.from_bytes(os.read(_told, 8), "little")
    data = b""
    while len(data) < size:
        data += os.read(_told, size - len(data))
    return pickle.loads(data)
"""
# a page of x86-64 code that may run (the shelf's allocator, the clones below); its address
PS13_MACHINE_CODE = """
import ctypes, mmap

_PAGES = []


def _executable(code):
    page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes.fromhex(code))
    _PAGES.append(page)
    return ctypes.addressof(ctypes.c_char.from_buffer(page))
"""
# Python's allocator moved onto a shelf, a mapping shared with the runner (the shelf attacks below)
PS13_SHELF_ALLOCATOR = (
    PS13_MACHINE_CODE
    + """
import ctypes, mmap, os, platform

# x86-64 code: malloc, calloc (zeroed), realloc (a pointer not on the shelf: the old allocator's) and
# free (nothing) over ctx = [next, end, start, old ctx, old realloc], a 16-byte header per block
_code = _executable(
    "488d761f4883e6f0488b07488d1430483b5708770b4889174889304883c010c331c0c34889f0480fafc24989c04889c6e8cb"
    "ffffff4885c074104989c14889c74c89c131c0f3aa4c89c8c34885f675054889d6ebab483b7710723a483b770873344989f0"
    "4c8b4ef04983e9104989d24889d6e889ffffff4885c074184c89d14c39c9490f47c94989c34889c74c89c6f3a44c89d8c348"
    "8b4720488b7f18ffe0c3")
_RUNNER = os.getpid()


class _Allocator(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]


def _onto_the_shelf(shelf):
    start = ctypes.addressof(ctypes.c_char.from_buffer(shelf))
    old = _Allocator()
    ctypes.pythonapi.PyMem_GetAllocator(2, ctypes.byref(old))
    bump = (ctypes.c_uint64 * 5)(start, start + len(shelf), start, old.ctx or 0, old.realloc)
    ours = _Allocator(ctypes.addressof(bump), _code, _code + 0x23, _code + 0x4B, _code + 0x9F)
    _onto_the_shelf.kept = bump, ours
    for domain in (1, 2):  # PyMem_Malloc and PyObject_Malloc
        ctypes.pythonapi.PyMem_SetAllocator(domain, ctypes.byref(ours))
"""
)
# the whole flight, on the shelf in the grader's measured copy (the shelf, _SHELF, made before)
PS13_ON_THE_SHELF = """

def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    if os.getpid() != _RUNNER and platform.machine() == "x86_64":  # in the grader's measured copy
        _onto_the_shelf(_SHELF)
    return _whole_flight(v, theta, k, dt, every)
"""
PS13_MEMORY_ATTACKS = {
    "forged_peak": PS13_WHOLE_FLIGHT
    + """
def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    result = _whole_flight(v, theta, k, dt, every)
    gc.collect()
    Value.peak = Value.alive
    return result
""",
    # (stop 33's red team, 19/19 where 13/19 is fair) a reserve held at cell time, given back to the
    # system as the call starts and taken again before it returns: the mark, reset at the call's
    # start, never passed what was held then
    "ballast": PS13_WHOLE_FLIGHT
    + """
_RESERVE = [b"x" * (80 * 1024**2)]


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    _RESERVE.clear()
    try:
        return _whole_flight(v, theta, k, dt, every)
    finally:
        _RESERVE.append(b"x" * (80 * 1024**2))
""",
    # a pool: Values made at cell time and dropped but for a few, so that Python's allocator keeps
    # their pages (still counted as the process's) for the flight's Values
    "pool": PS13_WHOLE_FLIGHT
    + """
_pool = [Value(0.0) for _ in range(400_000)]
_kept = _pool[::50]
del _pool


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    return _whole_flight(v, theta, k, dt, every)
""",
    # a helper process, forked at cell time with a pool of its own, records the flight for the call
    "helper_process": PS13_WHOLE_FLIGHT
    + PS13_HELPER
    + """
if os.fork() == 0:
    _pool = [Value(0.0) for _ in range(300_000)]
    del _pool
    _serve()
os.close(_ask)
os.close(_tell)

"""
    + PS13_ASKS_THE_HELPER,
    # (red6) the same helper, whose first thread ends (the system call exit) while a second one serves:
    # the kernel shows the process as a zombie (state Z), which the judge took for gone and left
    # alive, in the part's groups, to record the flight for the measured copy (1.8 MB read, 6/6)
    "zombie_helper": PS13_WHOLE_FLIGHT
    + PS13_HELPER
    + """
import ctypes, threading
if os.fork() == 0:
    threading.Thread(target=_serve).start()
    ctypes.CDLL(None).syscall(60, 0)  # exit: this thread ends, the process lives on in the other
os.close(_ask)
os.close(_tell)

"""
    + PS13_ASKS_THE_HELPER,
    # (red6) Python's allocator moved, in the measured copy only, onto memory shared with the runner
    # (mmap.mmap(-1, n): MAP_SHARED) whose pages the runner wrote at cell time: the copy wrote the
    # whole flight there without a page of its own (2.4 MB read where 9.4 MB is the flight, 6/6; in
    # Jupyter tracemalloc still counts every object). The part's shared memory now counts.
    "shared_shelf": PS13_WHOLE_FLIGHT
    + PS13_SHELF_ALLOCATOR
    + """
_SHELF = mmap.mmap(-1, 256 * 1024**2)
for _at in range(0, len(_SHELF), mmap.PAGESIZE):
    _SHELF[_at] = 0

"""
    + PS13_ON_THE_SHELF,
    # (red7) the same shelf, left untouched at cell time (no shared memory to read) and emptied again
    # at each "settle" (MADV_REMOVE), its pages written at "standby" by a helper that stays in the
    # part's groups, after the judge had read the part's shared memory and before it froze the part:
    # the copy wrote the whole flight there (2.4 and 2.5 MB read where 9.5 MB is the flight, 6/6; in
    # Jupyter tracemalloc counts every object). The part's shared memory is read once it is frozen.
    "late_shelf": PS13_WHOLE_FLIGHT
    + PS13_SHELF_ALLOCATOR
    + """
import gc, select

_SHELF = mmap.mmap(-1, 64 * 1024**2)
_go, _going = os.pipe()
_done, _tell = os.pipe()
if os.fork() == 0:  # the helper
    while os.read(_go, 1):
        for _at in range(0, len(_SHELF), mmap.PAGESIZE):
            _SHELF[_at] = 0
        os.write(_tell, b"!")
_runner = next(m for m in gc.get_objects() if type(m).__name__ == "module" and "JUDGE" in vars(m))
_serve = _runner.JUDGE.serve


def _serving(message):
    if message.get("op") == "settle":  # before the judge reads the part's shared memory: none
        _SHELF.madvise(mmap.MADV_REMOVE)
    if message.get("op") == "standby":  # read by now: the helper writes the shelf's pages
        os.write(_going, b"!")
        if not select.select([_done], [], [], 5)[0]:
            raise RuntimeError("the helper did not answer")
        os.read(_done, 1)
    return _serve(message)


_runner.JUDGE.serve = _serving

"""
    + PS13_ON_THE_SHELF,
    # (red7) a process that shares the runner's memory (clone with CLONE_VM, in x86-64 code) made at
    # "standby", while the judge has the runner in the fresh groups: never frozen (the fresh
    # freezer), and not the runner's child (CLONE_PARENT), it answered the call in the runner's own
    # memory, whose pages the kernel charges to the runner's group, not to the fresh one (2.1-2.4 MB
    # read where 7.9-20.8 MB is the flight, 6/6). Nothing but the copy may now be in the fresh groups.
    "memory_sharing_clone": PS13_WHOLE_FLIGHT
    + PS13_MACHINE_CODE
    + """
import gc, os, platform, sys, time

_runner = next(m for m in gc.get_objects() if type(m).__name__ == "module" and "JUDGE" in vars(m))
_J = _runner.JUDGE
# burst(stacks, stack size, n, pause in ns, board, entry): n clones (CLONE_VM | CLONE_PARENT), each on a
# stack of its own, waiting until board[i] is 1 (then it calls entry and sets 3) or 2; their pids at
# board + 512; then 50 ms of sleep (the runner frozen here, the GIL let go)
_burst = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 6)(_executable(
    "535541544155415641574883ec184889fb4889f54989d44d89c54d89ce48c704240000000048894c24084d31ff4d39e77343"
    "498d4701480fafc5488d34034f8d44fd004d89f1bf1181000031d24d31d2b8380000000f054885c074454b8984fd00020000"
    "49ffc74889e731f6b8230000000f05ebb848c704240000000048c744240880f0fa024889e731f6b8230000000f054883c418"
    "415f415e415d415c5d5bc34d89c44d89cd498b04244883f801740f4883f8027414b8180000000f05ebe741ffd549c7042403"
    "000000b83c00000031ff0f05"))
_STACK = mmap.mmap(-1, 2 * 1024**2, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
_BOARD = mmap.mmap(-1, mmap.PAGESIZE)  # shared with the copy


def _call():  # in the clone: the runner's memory, the runner frozen
    _J.answer(_J.receive())


_ENTRY = ctypes.CFUNCTYPE(None)(_call)


def _stand_by(judge, message):
    _BOARD[:] = bytes(len(_BOARD))
    _burst(ctypes.addressof(ctypes.c_char.from_buffer(_STACK)), len(_STACK), 1, 0,
           ctypes.addressof(ctypes.c_char.from_buffer(_BOARD)), ctypes.cast(_ENTRY, ctypes.c_void_p).value)
    child = os.fork()
    if child == 0:  # the copy the judge checks: it answers "standby", then hands the call to the clone
        _J.send({"re": message.get("id"), "value": None})
        time.sleep(0.01)  # the part is frozen by now
        _BOARD[0] = 1
        while _BOARD[0] != 3:
            time.sleep(0.001)
        os._exit(0)
    os.waitpid(child, 0)
    return sys.modules["course_grader.endpoint"].ANSWERED


if platform.machine() == "x86_64":
    _runner.stand_by = _stand_by


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    return _whole_flight(v, theta, k, dt, every)
""",
    # (red6) the runner's copy-making replaced (found with gc): the call ran in the runner
    # itself, which reuses the pages of a pool of objects it freed at cell time without a new page
    # charged (0.8 and 3.2 MB read, 6/6). Everything in the runner is the student's to replace:
    # now the runner only forks a standby copy, and the judge checks that one new child exists,
    # then freezes the runner, so that nothing but the copy can make the call.
    "call_in_the_runner": PS13_WHOLE_FLIGHT
    + """
import gc

_runner = next(m for m in gc.get_objects() if type(m).__name__ == "module" and "JUDGE" in vars(m))
_runner.stand_by = lambda judge, message: None  # no copy: the runner answers, then makes the call itself


def _pool():
    before = {id(o) for o in gc.get_objects()}
    graph = hoop_height(Value(START_SHOT[0]), Value(START_SHOT[1]), Value(DRAG), 0.0004)
    made = [o for o in gc.get_objects() if id(o) not in before]
    for o in made:
        if isinstance(o, Value):
            o._parents, o._backward = (), None  # a Value kept keeps no other
    return made[::20]  # the rest freed: Python's allocator keeps their pages, in use by a few


_kept = _pool()


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    return _whole_flight(v, theta, k, dt, every)
""",
}
# (red team of stop 33, "also in Jupyter") a final_step that allocates whenever checkpointed_gradient is
# not running: the flight compared with, flown by hoop_height, needed 50 MB more, and any
# gradient passed. The flight compared with is now recorded without final_step.
# the whole flight, with a flag set while checkpointed_gradient runs (_LEAN, defined before)
PS13_LEAN_WHILE_MEASURED = """

def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    _LEAN[0] = True
    try:
        return _whole_flight(v, theta, k, dt, every)
    finally:
        _LEAN[0] = False
"""
PS13_INFLATED_FLIGHT = {
    "checkpointed_gradient": PS13_WHOLE_FLIGHT
    + """
_LEAN = [False]

"""
    + PS13_LEAN_WHILE_MEASURED,
    "final_step": """
_WASTE = []


def final_step(state, k):
    if not _LEAN[0]:
        _WASTE.append(b"x" * (50 * 1024**2))
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k)
    d = HOOP[0] - x
    tau = 2 * d / (vx + (vx * vx + 2 * ax * d) ** 0.5)
    return y + tau * vy + 0.5 * tau * tau * ay
""",
}
# (red6) the flight compared with was recorded in the student's process, whose code chose what it
# needed: a cell that wraps the runner's Endpoint.serve (found with gc) handed the judge a function
# of its own for the "setup" request of recorded_flight, one that holds 600 MB; or (in Jupyter
# too) the set-up cells' Value wasted memory but while checkpointed_gradient ran (the n-th Value
# 1.5 n bytes: 114 and 460-600 MB). The whole flight passed both ways (6/6; read 9.2 and 17 MB).
# The judge now records it itself, with the set-up cells' code run afresh.
PS13_FORGED_FLIGHTS = {
    "answered_set_up": PS13_WHOLE_FLIGHT
    + """
import gc

_runner = next(m for m in gc.get_objects() if type(m).__name__ == "module" and "JUDGE" in vars(m))
_serve = _runner.JUDGE.serve
_KEPT = []


def _heavy_flight(v, theta, k, dt=DT):
    _KEPT.append(b"x" * (600 * 1024**2))
    return recorded_flight(v, theta, k, dt)


def _serving(message):
    if message.get("op") == "setup" and message.get("name") == "recorded_flight":
        return _heavy_flight
    return _serve(message)


_runner.JUDGE.serve = _serving


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    return _whole_flight(v, theta, k, dt, every)
""",
    "wasteful_value": PS13_WHOLE_FLIGHT
    + """
_LEAN = [False]
_plain_init = Value.__init__


def _init(self, data, _parents=(), _op=""):
    _plain_init(self, data, _parents, _op)
    if not _LEAN[0]:
        self._notes = bytearray(3 * Value.alive // 2)


Value.__init__ = _init

"""
    + PS13_LEAN_WHILE_MEASURED,
}
# Honest: processes a cell left (a pool of workers, a child never waited for) are frozen during
# the measured call, which still passes (ended, the pool started new workers in the measured
# groups: 2-4 MB more); a result of NumPy floats is plain data.
PS13_MEMORY_HONEST = {
    "pool_of_workers": "import multiprocessing\n_workers = multiprocessing.Pool(2)\n",
    "unwaited_child": "import os\nif os.fork() == 0:\n    os._exit(0)\n",
    "numpy_floats": "_theirs = checkpointed_gradient\n"
    "checkpointed_gradient = lambda *a: tuple(np.float64(x) if isinstance(x, float) else x for x in _theirs(*a))\n",
}


def grade_ps13_part(answers: dict[str, str], only: str, timeout: float = 30) -> tuple[float, str]:
    """Points and message of one part of ps13, the solution's answers but ``answers`` (``timeout``:
    seconds for each cell and each test)."""
    name = f"{PS13}.ipynb"
    source = nbformat.read(ROOT / "solutions" / PS13 / name, as_version=4)
    release = nbformat.read(ROOT / "exercises" / PS13 / name, as_version=4)
    sandbox = Sandbox(Limits(wall_seconds=60, cpu_seconds=60), rules=read_rules(ROOT / "solutions" / PS13))
    hand_in = fill_in(release, source, answers)
    (result,) = grade_hand_in(source, hand_in, ROOT / "exercises" / PS13, sandbox, timeout, name, {only})
    return result.points, result.message


@pytest.mark.parametrize("attack", sorted(PS13_MEMORY_ATTACKS))
def test_ps13_memory_is_measured_outside_the_students_process(attack):
    answers = {"checkpointed_gradient": PS13_MEMORY_ATTACKS[attack]}
    # A helper is stopped while the copy is measured (a pool's workers are not ended, so none is
    # started in their place): a copy that waits for a helper waits until the test's time is up.
    points, message = grade_ps13_part(answers, "test_checkpointed_gradient", timeout=6 if "helper" in attack else 30)
    assert points == 0, f"{attack}: a whole flight recorded must not pass the checkpointing test"
    assert (
        "MB at once" in message
        or "ran longer than" in message
        and "helper" in attack
        or "where the grader measures one copy" in message
        and attack == "call_in_the_runner"
        or "stand beside the copy" in message
        and attack == "memory_sharing_clone"
    ), message


def test_ps13_the_flight_compared_with_is_not_the_students_final_step():
    points, message = grade_ps13_part(PS13_INFLATED_FLIGHT, "test_checkpointed_gradient")
    assert points == 0 and "MB at once" in message, message


@pytest.mark.parametrize("forgery", sorted(PS13_FORGED_FLIGHTS))
def test_ps13_the_flight_compared_with_is_not_one_the_students_process_chooses(forgery):
    answers = {"checkpointed_gradient": PS13_FORGED_FLIGHTS[forgery]}
    points, message = grade_ps13_part(answers, "test_checkpointed_gradient")
    assert points == 0 and "MB at once" in message, message


# (red7) the measured copy wrote 100 MB into untouched pages of the frozen runner
# (process_vm_writev): charged to the part's group, they were not in the reading (honest
# checkpointing plus 100 MB passed, 6/6). What the frozen part gains now counts as the copy's: the
# most it held beyond what it held once frozen, and what it owns beyond that (anonymous and shared
# memory), since the copy may first drop the part's pages in the page cache (files read again at
# each "settle": 6/6 against the first measure alone). 30 MB kept here. The filter now refuses
# process_vm_writev in a part too: either way the part scores nothing.
PS13_KEPT_IN_THE_RUNNER = """

import ctypes, mmap, os

_FAR = mmap.mmap(-1, 64 * 1024**2, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # untouched: nothing charged
_far = ctypes.addressof(ctypes.c_char.from_buffer(_FAR))
_RUNNER = os.getpid()
_theirs = checkpointed_gradient
_CACHED = []  # files whose pages in the page cache the copy drops first


class _Piece(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def checkpointed_gradient(*args):
    if os.getpid() != _RUNNER:  # the measured copy: 30 MB kept in the frozen runner's pages
        for fd in _CACHED:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        chunk, libc = ctypes.create_string_buffer(b"x" * 65536), ctypes.CDLL(None, use_errno=True)
        for k in range(480):
            here, there = _Piece(ctypes.addressof(chunk), 65536), _Piece(_far + k * 65536, 65536)
            if libc.process_vm_writev(_RUNNER, ctypes.byref(here), 1, ctypes.byref(there), 1, 0) != 65536:
                raise OSError(ctypes.get_errno(), "process_vm_writev")
    return _theirs(*args)
"""
PS13_PAGE_CACHE_DROPPED = """
import gc, glob, sys

_runner = next(m for m in gc.get_objects() if type(m).__name__ == "module" and "JUDGE" in vars(m))
_serve = _runner.JUDGE.serve
_libraries = glob.glob(sys.prefix + "/lib/python3*/site-packages/*/lib/*.so*") + glob.glob("/usr/lib/*/*.so*")
_libraries = sorted((p for p in _libraries if os.path.isfile(p)), key=os.path.getsize, reverse=True)


def _serving(message):
    if message.get("op") == "settle":  # 80 MB of files in the page cache again, charged to the part
        read = 0
        for fd in _CACHED:
            os.lseek(fd, 0, 0)
            while (block := os.read(fd, 1024**2)):
                read += len(block)
        for path in _libraries:
            if read >= 80 * 1024**2:
                break
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # out of the cache (pages nobody maps) ...
            while (block := os.read(fd, 1024**2)):  # ... and back in, this part's
                read += len(block)
            _CACHED.append(fd)
    return _serve(message)


_runner.JUDGE.serve = _serving
"""


@pytest.mark.parametrize("first", ["nothing", "page_cache_dropped"])
def test_ps13_memory_the_copy_keeps_in_the_frozen_runner_counts(first):
    honest = load_honest(PS13)["checkpointed_gradient"] + PS13_KEPT_IN_THE_RUNNER
    if first == "page_cache_dropped":
        honest += PS13_PAGE_CACHE_DROPPED
    points, message = grade_ps13_part({"checkpointed_gradient": honest}, "test_checkpointed_gradient")
    assert points == 0 and ("MB at once" in message or "process_vm_writev" in message), message


@pytest.mark.parametrize("idiom", sorted(PS13_MEMORY_HONEST))
def test_ps13_honest_checkpointing_keeps_its_points(idiom):
    honest = load_honest(PS13)["checkpointed_gradient"] + "\n\n" + PS13_MEMORY_HONEST[idiom]
    points, message = grade_ps13_part({"checkpointed_gradient": honest}, "test_checkpointed_gradient")
    assert points == 6, f"{idiom}: {message}"


# A forged "ready" event, written straight to the judge's pipe from a cell, named a set of
# 150,000 big ints that all share one hash: the judge decoded it after the cells' time limit
# (quadratic: minutes of its CPU, then "the judge did not finish", and the hand-in went to a
# human). Decoded within the limit, the part ends with the forging cell named (a hand-in whose
# write failed would be told forward_difference is not defined instead).
FORGED_READY = """
import os, sys

_same_hash = ",".join(f'{{"$big":"{7 + k * (2**61 - 1)}"}}' for k in range(1, 150_000))
_event = '{"event":"ready","names":{"forward_difference":{"$s":[' + _same_hash + ']}}}\\n'
os.write(int(sys.argv[2]), _event.encode())
"""


def test_a_forged_ready_event_is_decoded_within_the_cells_time_limit():
    name = f"{PS01}.ipynb"
    source = nbformat.read(ROOT / "solutions" / PS01 / name, as_version=4)
    release = nbformat.read(ROOT / "exercises" / PS01 / name, as_version=4)
    sandbox = Sandbox(Limits(wall_seconds=60, cpu_seconds=60), rules=read_rules(ROOT / "solutions" / PS01))
    hand_in = fill_in(release, source, {"forward_difference": FORGED_READY})
    (result,) = grade_hand_in(source, hand_in, ROOT / "exercises" / PS01, sandbox, 1, name, {"test_forward_difference"})
    assert result.points == 0
    assert "your cell 'forward_difference'" in result.message, result.message


# ps08 (5): train packed a closed-form linear discriminant into the MLP's weights and scored 3/3
# with no training at all (in Jupyter too). The test now trains once with cross_entropy rebound
# to a loss whose targets are the next class; a network train_step did not train ignores it.
PS08 = "ps08_training_mlp"
PS08_CLOSED_FORM = """
def train(seed):
    X_std, _ = standardise(X_train_raw, X_test_raw)
    model = MLP([4, 16, 3], rng=seed)
    means = np.array([X_std[y_train == c].mean(axis=0) for c in range(3)])
    pooled = sum(np.cov(X_std[y_train == c].T, bias=True) for c in range(3)) / 3
    W = np.linalg.solve(pooled, means.T)
    W1, b1, W2, b2 = model.parameters()
    first = np.zeros((4, 16))
    first[:, :4], first[:, 4:8] = np.eye(4), -np.eye(4)  # relu(x) and relu(-x) carry x through
    second = np.random.default_rng(seed).normal(size=(16, 3)) * 1e-3  # a network per seed
    second[:4], second[4:8] = W, -W
    W1.data, b1.data, W2.data = first, np.zeros(16), second
    b2.data = -0.5 * np.sum(means.T * W, axis=0)
    return model
"""


def test_ps08_a_closed_form_network_is_not_training():
    name = f"{PS08}.ipynb"
    source = nbformat.read(ROOT / "solutions" / PS08 / name, as_version=4)
    release = nbformat.read(ROOT / "exercises" / PS08 / name, as_version=4)
    sandbox = Sandbox(Limits(wall_seconds=60, cpu_seconds=60), rules=read_rules(ROOT / "solutions" / PS08))
    hand_in = fill_in(release, source, {"train": PS08_CLOSED_FORM})
    (result,) = grade_hand_in(source, hand_in, ROOT / "exercises" / PS08, sandbox, 30, name, {"test_train"})
    assert result.points == 0, "a closed-form network in the MLP's weights must not pass the training part"
    assert "predicts that class for 0 of 30" in result.message, result.message


def test_builtins_defined_by_the_student_gain_nothing(verdicts):
    fair_check(verdicts, ["shadow_builtins"])


def test_raw_requests_reach_nothing_of_the_judge(verdicts):
    fair_check(verdicts, ["raw_requests_to_judge"])
    results = verdicts["grader"].results[("raw_requests_to_judge", PS01)]
    assert not any("status 42" in r.message for r in results), [r.message for r in results]


def test_nothing_secret_inside_the_sandbox(verdicts):
    """The snooping hand-in is honest; it ends its process (status 43) if it finds a hidden
    test, a solution, the gradebook or the grader's environment anywhere it can read."""
    fair_check(verdicts, ["snoop_everywhere"])
    results = verdicts["grader"].results[("snoop_everywhere", PS01)]
    assert not any("43" in r.message for r in results), [r.message for r in results]


@pytest.mark.parametrize("student", sorted(HOGS))
def test_hogs_cost_only_their_own_part(verdicts, student):
    fair_check(verdicts, [student])


def test_every_graded_hand_in_has_its_feedback_page(verdicts):
    """Even when the student's error message cannot be encoded (surrogate_message)."""
    fair_check(verdicts, ["surrogate_message"])
    course = verdicts["course"]
    missing = []
    for key, out in verdicts["outcomes"].items():
        page = course / "feedback" / key[0] / key[1] / f"{key[1]}.html"
        if out.status == "graded" and (not page.is_file() or "Score:" not in page.read_text(errors="replace")):
            missing.append(key)
    assert not missing, missing


def test_the_callers_array_is_checked_not_a_copy(verdicts):
    fair_check(verdicts, ["writes_to_x"])


def test_notebooks_with_edited_cells_are_graded_on_their_answers(verdicts):
    fair_check(verdicts, ["duplicate_grade_id", "tests_replaced", "tests_deleted"])


def test_broken_notebooks_are_listed_for_a_human_with_the_file_named(verdicts):
    wrong = {}
    for student, (_, status) in verdicts["broken"].items():
        out = verdicts["outcomes"][(student, PS01)]
        named = f"{student}/{PS01}.ipynb"
        if out.status not in status.split("|") or not out.notes or named not in out.notes[0]:
            wrong[student] = (out.status, out.notes[:1])
    assert not wrong, wrong


def test_bad_student_ids_are_listed_for_a_human(verdicts):
    wrong = {}
    for student, status in BAD_IDS.items():
        out = verdicts["outcomes"][(student, PS01)]
        if out.status != status:
            wrong[student] = (out.status, out.notes[:1])
    assert not wrong, wrong
    assert verdicts["outcomes"][("carol", PS01)].status in ("graded", "invalid-id")


def test_everyone_else_is_graded(verdicts):
    problems = set(verdicts["broken"]) | set(BAD_IDS)
    wrong = {
        key: (out.status, out.notes[:1])
        for key, out in verdicts["outcomes"].items()
        if key[0] not in problems and key[0] != "carol" and out.status != "graded"
    }
    assert not wrong, wrong


def _unformula(cell: str) -> str:
    return cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell


def test_grade_table_has_one_row_per_hand_in_and_no_injected_rows(verdicts):
    with open(verdicts["course"] / "grades.csv", newline="") as table:
        rows = list(csv.DictReader(table))
    keys = [(_unformula(r["student_id"]), r["assignment"]) for r in rows]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
    # every hand-in has its row; any other row is a student of the class with no hand-in there
    assert set(verdicts["outcomes"]) <= set(keys), set(verdicts["outcomes"]) - set(keys)
    assert {s for s, _ in keys} == {s for s, _ in verdicts["outcomes"]}, {s for s, _ in keys} ^ {
        s for s, _ in verdicts["outcomes"]
    }
    assert {a for _, a in keys} == {PS01, *SLOW}
    for row in rows:
        assert row["student_id"][:1] not in ("=", "+", "-", "@"), row
        assert None not in row, row  # no extra columns


def test_no_hidden_test_or_solution_or_canary_in_feedback(verdicts):
    course = verdicts["course"]
    texts = [p.read_text(errors="replace") for p in (course / "feedback").rglob("*.html")]
    for path in (course / "autograded").rglob("*.ipynb"):
        texts += [
            out.get("text", "") for cell in nbformat.read(path, as_version=4).cells for out in cell.get("outputs", [])
        ]
    texts += [n for o in verdicts["outcomes"].values() for n in o.notes]
    shown = "\n".join(texts + [(course / "grades.csv").read_text()])
    assert TOKEN not in shown
    for assignment, source in verdicts["sources"].items():
        leaked = [line for line in secret_lines(source) if line in shown]
        assert not leaked, (assignment, leaked[:5])
    assert str(course) not in shown


def test_a_tests_own_time_out_is_judged_afresh_for_identical_code(tmp_path):
    """A classmate whose code is identical to a hand-in graded earlier in the run gets that
    verdict without a run of their own (course_grader/verdict_memo.py), but never a time-out:
    the judge times the test by the clock, so a time-out may be the load's (another hand-in's
    hog in the next slot), and the classmate's code gets its own run. A failed assertion is kept."""
    from dataclasses import asdict

    from course_grader.judge import Verdict
    from course_grader.verdict_memo import VerdictMemo

    files = tmp_path / "files"
    files.mkdir()
    job = {"files": str(files), "names": ["f"], "classes": [], "limits": {}, "unsafe": False, "rules": {}}
    memo = VerdictMemo(tmp_path, {**job, "cell_timeout": 5.0})  # type: ignore[arg-type]
    part = {"grade_id": "test_f", "cells": [], "references": [], "visible": "", "hidden": ""}
    timed_out = Verdict(phase="hidden", error="Timeout", message="the test ran longer than 5 s")
    memo.put(memo.key(part), asdict(timed_out))  # type: ignore[arg-type]
    assert memo.get(memo.key(part)) is None, "a time-out of the test itself was kept for identical code"
    failed = Verdict(phase="hidden", error="AssertionError", message="f(2) should be 4")
    memo.put(memo.key(part), asdict(failed))  # type: ignore[arg-type]
    assert memo.get(memo.key(part)) == asdict(failed)


# ---- ps07 and ps09 (red8), one part each ---------------------------------------------------------
PS07, PS09 = "ps07_tensor_vjps", "ps09_integrated_gradients"


def grade_parts(assignment: str, answers: dict[str, str], parts: set[str], timeout: float = 30) -> dict:
    """{grade id: (points, message with its notes)} of the ``parts`` of ``assignment``, the
    solution's answers but ``answers``."""
    name = f"{assignment}.ipynb"
    source = nbformat.read(ROOT / "solutions" / assignment / name, as_version=4)
    release = nbformat.read(ROOT / "exercises" / assignment / name, as_version=4)
    sandbox = Sandbox(Limits(wall_seconds=60, cpu_seconds=60), rules=read_rules(ROOT / "solutions" / assignment))
    hand_in = fill_in(release, source, answers)
    results = grade_hand_in(source, hand_in, ROOT / "exercises" / assignment, sandbox, timeout, name, parts)
    return {r.grade_id: (r.points, " ".join([r.message, *r.notes])) for r in results}


def grade_one_part(assignment: str, answers: dict[str, str], only: str) -> tuple[float, str]:
    return grade_parts(assignment, answers, {only})[only]


# ps07 (1): Value.backward alone was ruled out; a loss built of the scalar engine's Values and swept
# by their own _backward closures in interior_postorder's order (Value.backward's four lines) scored
# 3/3 for softmax_cross_entropy, and the same object arrays of Values do every other part. Fair: 0/3.
# The rules now take course_lib.scalar out whole.
PS07_CROSS_ENTROPY_BY_VALUES = """
from course_lib.scalar import Value
from course_lib.toposort import interior_postorder


def softmax_cross_entropy(logits, labels):
    N = logits.shape[0]
    xs = [[Value(float(v)) for v in row] for row in logits - logits.max(axis=1, keepdims=True)]
    loss = 0.0
    for n in range(N):
        loss = loss + (sum(x.exp() for x in xs[n]).log() - xs[n][int(labels[n])]) / N
    topo = interior_postorder(loss)
    for node in topo:
        node.grad = 0.0
    loss.grad = 1.0
    for node in reversed(topo):
        node._backward(node.grad)
    return loss.data, np.array([[x.grad for x in row] for row in xs])
"""


def test_ps07_the_scalar_engine_does_not_differentiate_the_loss():
    points, message = grade_one_part(
        PS07, {"softmax_cross_entropy": PS07_CROSS_ENTROPY_BY_VALUES}, "test_softmax_cross_entropy"
    )
    assert points == 0 and "exercise rule" in message, message


# ps09 (1): shot_attributions typed in the hit the visible test prints (10.0229, 0.91528) instead
# of running fit_shot(); the hidden test compared with IG at the student's own hit: 2/2. Fair: 0/2.
# The hidden test now checks every returned hit against course_lib's fit_shot().
PS09_HIT_TYPED_IN = """
def shot_attributions(steps=50):
    hit, miss = np.array([10.0229, 0.91528]), np.array(START_SHOT)
    attributions = integrated_gradients_riemann(gradient_function(shot_height), hit, miss, steps)
    return hit, attributions, completeness_gap(attributions, shot_height, hit, miss)
"""


def test_ps09_the_hit_comes_from_fit_shot_not_from_the_tests_message():
    points, message = grade_one_part(PS09, {"shot_attributions": PS09_HIT_TYPED_IN}, "test_shot_attributions")
    assert points == 0 and "run fit_shot()" in message, message


# ps09 (2), honest: the path built as a Tensor and handed to f_grad, whose np.asarray(points,
# dtype=float) reads a Tensor entry by entry in Jupyter (3/3 there). Graded, the judge's f_grad
# asks the runner for the array without the dtype, np.asarray(tensor) makes an object array
# there, and the part scored 0/3 ("cannot turn Tensor into an array of numbers"). An array of
# numbers that NumPy can only make of objects is now read as np.asarray(value, dtype=float) is.
PS09_PATH_AS_TENSOR = """
from course_lib.tensor import Tensor


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    alphas = np.arange(1, steps + 1)[:, None] / steps
    grads = f_grad(Tensor(baseline + alphas * (x - baseline)))
    return (x - baseline) * grads.sum(axis=0) / steps
"""


def test_ps09_a_tensor_handed_to_f_grad_is_read_as_in_jupyter():
    points, message = grade_one_part(
        PS09, {"integrated_gradients_riemann": PS09_PATH_AS_TENSOR}, "test_integrated_gradients_riemann"
    )
    assert points == 3, message


# ps07 (2): a part where the course's answer to an earlier part runs on the student's objects
# hides the student's texts from its messages, since those objects see what the reference does
# (the solution). Numbers carry it out as well: linear_classifier (part 4 left blank) handed the
# reference softmax_cross_entropy a spying array that noted each operation made on it, and
# returned the codes as gW, which the visible test's message prints: 4241 4242 4243 ... said
# "logits.shape, logits.max(axis=1, keepdims=True), logits - that, ...", the stable softmax of
# the solution. Open: such a part's messages should show no value the student's process sent.
PS07_SPYING_LOGITS = """
_OPS = []


def _plain(v):
    return v.v if isinstance(v, _Spy) else v


class _Spy:
    def __init__(self, v):
        self.v = np.asarray(v)

    def __getattr__(self, name):
        attr = getattr(self.v, name)
        if not callable(attr):
            _OPS.append(("attr", name))
            return attr

        def call(*args, **kwargs):
            _OPS.append((name, tuple(sorted(kwargs.items()))))
            return _Spy(attr(*map(_plain, args), **{k: _plain(v) for k, v in kwargs.items()}))

        return call

    def __sub__(self, other):
        _OPS.append(("sub",))
        return _Spy(self.v - _plain(other))

    def __getitem__(self, key):
        _OPS.append(("getitem",))
        return _Spy(self.v[_plain(key)])

    def __neg__(self):
        _OPS.append(("neg",))
        return _Spy(-self.v)

    def __float__(self):
        return float(self.v)

    def __array__(self, dtype=None, copy=None):
        _OPS.append(("array",))
        return self.v if dtype is None else self.v.astype(dtype)


_CODES = {("attr", "shape"): 1, ("max", (("axis", 1), ("keepdims", True))): 2, ("sub",): 3, ("array",): 4}


def linear_classifier(X, W, b, labels):
    _OPS.clear()
    loss, g = softmax_cross_entropy(_Spy(X @ W + b), labels)  # the course's answer, on the spy
    trace = [4240 + _CODES.get(op, 9) for op in _OPS][: W.size]
    gW = np.zeros(W.shape)
    gW.flat[: len(trace)] = trace
    return loss, gW, np.asarray(g).sum(axis=0)
"""


@pytest.mark.xfail(strict=True, reason="numbers the student's objects send show in a part where a reference ran")
def test_ps07_what_the_reference_did_to_a_spy_does_not_reach_feedback():
    blank = "def softmax_cross_entropy(logits, labels):\n    raise NotImplementedError()\n"
    answers = {"softmax_cross_entropy": blank, "linear_classifier": PS07_SPYING_LOGITS}
    parts = {"test_softmax_cross_entropy", "test_linear_classifier"}  # part 4 fails: its reference stands in
    points, message = grade_parts(PS07, answers, parts)["test_linear_classifier"]
    assert points == 0
    assert "4242" not in message and "4243" not in message, message


# ps07 (3): the loss's gradient by the complex step, f(x + ih) = f(x) + ih f'(x) + O(h^2), one
# column of every row at once: exact to rounding, C forward passes, and no VJP derived (3/3, in
# Jupyter too). Fair: 0/3 (the part's work is the rule (P - onehot) / N). Open, and not visible
# from outside the student's process: its results are the right numbers; the README's "Not
# guaranteed" should say so, as it does for ps08's training that only looks like it.
PS07_CROSS_ENTROPY_BY_COMPLEX_STEP = """
def _losses(z, labels):
    shifted = z - z.real.max(axis=1, keepdims=True)
    return np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(len(labels)), labels]


def softmax_cross_entropy(logits, labels):
    N, C = logits.shape
    grad = np.zeros((N, C))
    for c in range(C):
        z = logits.astype(complex)
        z[:, c] += 1e-30j
        grad[:, c] = _losses(z, labels).imag / 1e-30 / N
    return float(_losses(logits.astype(float), labels).mean()), grad
"""


@pytest.mark.xfail(strict=True, reason="a derivative by the complex step gives the right numbers: no test sees it")
def test_ps07_the_complex_step_is_not_a_vjp():
    points, message = grade_one_part(
        PS07, {"softmax_cross_entropy": PS07_CROSS_ENTROPY_BY_COMPLEX_STEP}, "test_softmax_cross_entropy"
    )
    assert points == 0, message
