"""The grading harness: runs inside the sandbox, one fresh process per graded part.

The grader sends one job on stdin (JSON): the trusted set-up cells (from the instructor's
source notebook), the student's cells up to this part, and this part's test (visible and
hidden code, from the source notebook, never from the hand-in). The harness answers on the
file descriptor the job names with one JSON line per event and a final verdict. Points come only from that
verdict: the test's code ran to its end. Nothing the student prints is read as a score, and
there is no IPython here (no input transformers, no display hook, no "last expression").

Before the test runs, the harness undoes what answer code did to shared state: every module
namespace and every class of course_lib and of the set-up cells is put back as it was before
the first answer cell (so ``numpy.allclose = ...`` or a patched reference has no effect),
the recursion limit, ``sys.displayhook`` and the standard streams are reset. If answer code
changes them again while the test runs, the part fails and says so. Functions the test cell
names with a ``# grader: forbid <module>.<name>`` line may not be called while a student's
function runs; a ``# grader: reference <grade id> ...`` line runs those earlier answer cells'
solutions just before the test, so the part is graded on its own and not on an earlier slip.
An audit hook refuses tracing, garbage-collector introspection, frame access from answer or
test code, ctypes, new processes, signals and sockets while student code or the
test runs. Every event the harness writes carries the job's nonce, which only the harness's
own frames hold, so a verdict line written by answer code is ignored.

Run as ``python -I harness.py``; uses the standard library only (and whatever the cells import).
"""

import builtins
import io
import json
import os
import resource
import signal
import sys
import traceback
import types

DENIED_EVENTS = (
    "sys.settrace",
    "sys.setprofile",
    "sys.addaudithook",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "os.fork",
    "os.forkpty",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "subprocess.Popen",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "sys._current_frames",
)
# Frames lead up to the harness's own (and its nonce): answer and test code may not hold one.
FRAME_ATTRIBUTES = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")
UNTRUSTED_FILES = ("<answer", "<extra", "<visible test", "<hidden test", "<string>")
MAX_TEXT = 4000


class CellTimeout(BaseException):
    """Raised in the main thread when a cell or a test runs past its time."""


class ForbiddenCall(Exception):
    """A reference function the exercise asks students to write themselves was called."""


def main():
    job = json.loads(sys.stdin.buffer.read())
    os.close(0)
    for name, value in job.pop("rlimits").items():  # before any code of the student's runs
        resource.setrlimit(getattr(resource, name), (value, value))
    sys.path.insert(0, job.pop("course_lib_parent"))
    channel = os.fdopen(int(job["result_fd"]), "w", encoding="utf-8")
    os.set_inheritable(channel.fileno(), False)
    nonce = job.pop("nonce")  # signs every event: a line forged by answer code lacks it

    def emit(**event):
        channel.write(json.dumps(dict(event, nonce=nonce)) + "\n")
        channel.flush()

    student_mode = [False]

    def audit(event, args):
        if not student_mode[0]:
            return
        if (
            event in DENIED_EVENTS
            or event.startswith("ctypes.")
            or (event == "sys._getframe" and args[0].f_code.co_filename.startswith(UNTRUSTED_FILES))
            or (event == "object.__getattr__" and args[1] in FRAME_ATTRIBUTES)
        ):
            raise PermissionError(f"not allowed while grading: {event}")

    sys.addaudithook(audit)
    import logging

    logging._srcfile = None  # logging from answer code without frame lookups

    timeout = float(job["cell_timeout"])

    def on_alarm(signum, frame):
        raise CellTimeout()

    namespace = {"__name__": "__main__", "__builtins__": builtins}
    trusted, before = {}, None
    for cell in job["cells"]:
        if cell["kind"] == "setup":
            names = dict(namespace)
            outcome = run_cell(cell, namespace, timeout, on_alarm, student_mode, untrusted=before is not None)
            if outcome["status"] != "ok" and before is None:
                emit(event="setup-failed", cell=cell["name"], **outcome)
                finish(channel)
            trusted.update((k, v) for k, v in namespace.items() if names.get(k, _MISSING) is not v)
            continue
        if before is None:
            before = snapshot()
        emit(event="cell-start", cell=cell["name"])
        outcome = run_cell(cell, namespace, timeout, on_alarm, student_mode, untrusted=True)
        emit(event="cell-end", cell=cell["name"], **outcome)
    changed = restore(before or snapshot(), trusted, namespace)
    if changed:
        emit(event="restored", names=changed[:20])
    for cell in job.get("references", []):  # earlier parts' solutions: each part is graded on its own
        outcome = run_cell(cell, namespace, timeout, on_alarm, student_mode, untrusted=False)
        if outcome["status"] != "ok":
            emit(event="setup-failed", cell=cell["name"], **outcome)
            finish(channel)
    test = job["test"]
    guard_student_functions(namespace, trusted, test.get("forbid", []))
    trusted.update((k, v) for k, v in namespace.items() if k in trusted)
    guarded = snapshot()
    emit(event="test-start")
    verdict = run_test(test, namespace, timeout, on_alarm, student_mode)
    tampered = restore(guarded, {}, namespace)  # test code may rebind notebook names
    if verdict["passed"] and tampered:
        verdict = {
            "passed": False,
            "phase": "test",
            "error": "Tampering",
            "message": "your code changed " + ", ".join(tampered[:5]) + " while it was being tested; "
            "answers must not modify numpy, course_lib or the notebook's helpers",
        }
    emit(event="verdict", **verdict)
    finish(channel)


def finish(channel):
    channel.flush()
    os._exit(0)  # no atexit handlers, no finalizers of student objects after the verdict


def compile_cell(cell):
    return compile(cell["source"], f"<{cell['kind']} {cell['name']}>", "exec", dont_inherit=True)


def run_cell(cell, namespace, timeout, on_alarm, student_mode, untrusted):
    """Run one cell; report ok, error (with type and message), timeout or syntax error."""
    try:
        code = compile_cell(cell)
    except SyntaxError as error:
        return {
            "status": "syntax",
            "error": "SyntaxError",
            "message": f"{error.msg} (line {error.lineno}); the grader runs Python "
            f"{sys.version_info.major}.{sys.version_info.minor}",
        }
    out = io.StringIO()
    try:
        with_streams(
            out, lambda: timed(lambda: exec_student(code, namespace, student_mode, untrusted), timeout, on_alarm)
        )
    except CellTimeout:
        return {"status": "timeout", "error": "Timeout", "message": f"the cell ran longer than {timeout:g} s"}
    except BaseException as error:  # noqa: BLE001 - any failure of a cell is reported, never fatal
        return {"status": "error", "error": type(error).__name__, "message": clip(str(error))}
    return {"status": "ok"}


def exec_student(code, namespace, student_mode, on):
    student_mode[0] = on
    try:
        exec(code, namespace)
    finally:
        student_mode[0] = False


def timed(action, seconds, on_alarm):
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return action()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def with_streams(buffer, action):
    """Run action with sys.stdout and sys.stderr both writing to buffer (stderr never costs)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buffer
    try:
        return action()
    finally:
        sys.stdout, sys.stderr = saved


def run_test(test, namespace, timeout, on_alarm, student_mode):
    """The visible then the hidden part of the test cell; passed only if both ran to the end."""
    visible_output = io.StringIO()
    for phase, source in (("visible", test["visible"]), ("hidden", test["hidden"])):
        if not source.strip():
            continue
        code = compile(source, f"<{phase} test>", "exec", dont_inherit=True)
        out = visible_output if phase == "visible" else io.StringIO()
        sys.setrecursionlimit(1000)
        try:
            with_streams(
                out,
                lambda code=code: timed(lambda: exec_student(code, namespace, student_mode, True), timeout, on_alarm),
            )
        except CellTimeout:
            return {
                "passed": False,
                "phase": phase,
                "error": "Timeout",
                "output": clip(visible_output.getvalue()),
                "message": f"the test ran longer than {timeout:g} s: is there an endless loop?",
            }
        except BaseException as error:  # noqa: BLE001
            return {
                "passed": False,
                "phase": phase,
                "error": type(error).__name__,
                "in_test_code": raised_in_test(error),
                "message": clip(str(error)),
                "output": clip(visible_output.getvalue()),
            }
    return {"passed": True, "output": clip(visible_output.getvalue())}


def raised_in_test(error):
    """True when the exception came from the test's own code (an assert), not from answer code."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.endswith(" test>")


def guard_student_functions(namespace, bound_before, forbidden):
    """Count calls into the student's functions; forbidden references raise inside them."""
    depth = [0]

    def counted(function):
        def call(*args, **kwargs):
            depth[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1

        call.__name__, call.__doc__, call.__wrapped__ = getattr(function, "__name__", "f"), function.__doc__, function
        return call

    if not forbidden:
        return
    for name, value in list(namespace.items()):
        if (
            callable(value)
            and not isinstance(value, type)
            and not name.startswith("__")
            and bound_before.get(name, object()) is not value
        ):
            namespace[name] = counted(value)
    for dotted in forbidden:
        module_name, _, attr = dotted.rpartition(".")
        module = sys.modules.get(module_name)
        original = getattr(module, attr, None)
        if original is None:
            continue

        def guard(*args, _original=original, _dotted=dotted, **kwargs):
            if depth[0]:
                raise ForbiddenCall(
                    f"{_dotted} may not be used in this answer: the exercise asks you to compute it yourself"
                )
            return _original(*args, **kwargs)

        setattr(module, attr, guard)
        for name, value in list(namespace.items()):
            if value is original:
                namespace[name] = guard


PROTECTED = ("course_lib", "numpy", "math", "cmath", "builtins", "random", "operator", "functools", "itertools")


def snapshot():
    """The namespaces of the modules tests rely on, course_lib's classes and the interpreter
    hooks: what answer code may not change. (Classes of the set-up cells are the students' to
    extend: some exercises add methods to them.)"""
    state = {
        "modules": {},
        "classes": {},
        "sys": (
            sys.displayhook,
            sys.excepthook,
            sys.getrecursionlimit(),
            list(sys.path),
            list(sys.meta_path),
            dict(sys.modules),
        ),
    }
    for name, module in list(sys.modules.items()):
        if module is not None and name.split(".")[0] in PROTECTED:
            state["modules"][name] = (module, dict(vars(module)))
    for _, saved in state["modules"].values():
        for value in list(saved.values()):
            if (
                isinstance(value, type)
                and type(value.__dict__) is types.MappingProxyType
                and value.__module__.split(".")[0] == "course_lib"
            ):
                state["classes"][id(value)] = (value, dict(vars(value)))
    return state


def restore(state, trusted, namespace):
    """Put the snapshot and the set-up cells' names back; return the public names that had changed."""
    changed = []

    def put_back(label, current, saved, remove_new):
        for key in set(current) | set(saved):
            if key in saved and current.get(key, _MISSING) is not saved[key]:
                changed.append(f"{label}{key}") if not key.startswith("_") else None
                current[key] = saved[key]
            elif (
                key not in saved
                and remove_new
                and not key.startswith("_")
                and not isinstance(current[key], types.ModuleType)
            ):
                changed.append(f"{label}{key}")
                del current[key]

    for name, (module, saved) in state["modules"].items():
        put_back(f"{name}.", vars(module), saved, remove_new=name.split(".")[0] != "builtins")
    put_back("", namespace, trusted, remove_new=False)
    for cls, saved in state["classes"].values():
        current = dict(vars(cls))
        for key in set(current) | set(saved):
            if current.get(key, _MISSING) is not saved.get(key, _MISSING):
                changed.append(f"{cls.__qualname__}.{key}")
                setattr(cls, key, saved[key]) if key in saved else delattr(cls, key)
    displayhook, excepthook, limit, path, meta_path, modules = state["sys"]
    if (sys.displayhook, sys.excepthook) != (displayhook, excepthook):
        changed.append("sys.displayhook")
    sys.displayhook, sys.excepthook = displayhook, excepthook
    sys.setrecursionlimit(limit)
    sys.path[:] = path
    if sys.meta_path != meta_path:
        changed.append("sys.meta_path")
        sys.meta_path[:] = meta_path
    for name, module in modules.items():
        if sys.modules.get(name) is not module:
            changed.append(f"sys.modules[{name!r}]")
            sys.modules[name] = module
    return sorted(set(changed))


_MISSING = object()


def clip(text):
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " [...]"


if __name__ == "__main__":
    main()
