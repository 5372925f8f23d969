"""The Colab path: what a reader gets after clicking "Open in Colab".

Colab opens one notebook from GitHub in a Python that has numpy, matplotlib, graphviz, PyTorch and
JAX but not course_lib, with the working directory ``/content``, where nothing else of the
repository exists. The notebook's set-up cell then installs course_lib with pip.

This module rebuilds that situation: a fresh virtual environment with only Colab's packages (and
ipykernel to run a kernel), no course_lib, nbgrader or pytest in it. Its packages come
preinstalled, as in Colab: their distributions here (the lock's versions, PyTorch and JAX at the
oracles' exact pins) and what they need are hard-linked from this environment, file by file as
their RECORD lists them, so pip sees them installed (pip took 25 s per environment to install
them again, even from its cache). Each notebook is copied alone
into an empty folder and executed there by a kernel of that environment, after course_lib was
uninstalled, so every set-up cell really installs it. ``COURSE_LIB`` points the set-up cell at a
wheel of this checkout, built once, instead of GitHub (a plain, non-editable install, as in
Colab). Chapters must run to the end; student notebooks run their visible tests with the
solution filled in, once: in the Colab-like environment if they import PyTorch or JAX, otherwise
with the wheel alone, the stricter environment (course_lib imports neither, so such a notebook
runs the same in both).

Takes a few minutes (each environment is built once per module; pip uses its cache). Run alone with
``pytest tests/book/test_colab_path.py -n 0 -p no:cacheprovider``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from importlib.metadata import Distribution, distributions
from pathlib import Path

import course  # tools/course.py
import nbformat
import pytest
from built_site import html_path
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbgrader_helpers import fill_in, graded_cells
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from paths import CHAPTERS, CONFIG, NOTEBOOKS, ROOT, SETUP_CELL, ids
from scratch import remove_in_background

STUDENT_NOTEBOOKS = [p for p in NOTEBOOKS if p.parent.parent.name == "exercises"]
ORACLE_IMPORT = re.compile(r"^\s*(import|from)\s+(torch|jax)\b", re.MULTILINE)
# Student notebooks whose code imports PyTorch or JAX: they run in the Colab-like environment.
WITH_ORACLES = [
    p
    for p in STUDENT_NOTEBOOKS
    if any(ORACLE_IMPORT.search(c.source) for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code")
]
# Assignments that compare with PyTorch cannot run without it: their Tools cell says what to install.
NEEDS_PYTORCH = [p for p in STUDENT_NOTEBOOKS if p.parent.name == "ps10_pytorch_comparison"]
WITHOUT_PYTORCH = [p for p in STUDENT_NOTEBOOKS if p not in NEEDS_PYTORCH]
# Colab's preinstalled packages that the course uses. torch and jax carry the oracles' exact pins:
# a looser torch spec can pull the multi-GB CUDA build.
ORACLES = [
    req
    for line in (ROOT / "requirements-oracles.txt").read_text().splitlines()
    if line.strip() and not line.lstrip().startswith("#") and (req := Requirement(line)).name in {"torch", "jax"}
]
COLAB_PACKAGES = [*map(Requirement, ["ipykernel", "numpy", "matplotlib", "graphviz"]), *ORACLES]
CELL_TIMEOUT = 300  # seconds; the set-up cell's pip install is the slowest cell


@dataclass
class Colab:
    python: Path
    kernels: Path  # a kernelspec folder with the kernel "colab"
    env: dict[str, str]  # environment of the kernel and of pip

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), *args], cwd=cwd, env=self.env, capture_output=True, text=True)


def installed_closure(requirements: list[Requirement]) -> list[Distribution]:
    """The distributions installed here that ``requirements`` name, at versions they allow, and
    everything those need (extras and environment markers as pip reads them)."""
    site = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    here = {canonicalize_name(d.metadata["Name"]): d for d in distributions(path=sorted(site))}
    wanted, chosen = list(requirements), {}
    while wanted:
        req = wanted.pop()
        dist = here.get(canonicalize_name(req.name))
        assert dist and req.specifier.contains(dist.version, prereleases=True), f"{req} is not installed here"
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key not in chosen:
            chosen[key] = dist
            for need in map(Requirement, dist.requires or []):
                if not need.marker or any(need.marker.evaluate({"extra": e}) for e in {"", *req.extras}):
                    wanted.append(need)
    return list({d.metadata["Name"]: d for d in chosen.values()}.values())


def link_installed(dists: list[Distribution], venv: Path) -> None:
    """Install ``dists`` into ``venv`` as this environment has them: each file of their RECORD
    hard-linked (copied across file systems), scripts copied with ``venv``'s Python in the #! line."""
    for dist in dists:
        root = Path(dist.locate_file(""))
        into = venv / root.relative_to(sys.prefix)
        for name in dist.files or []:
            source, target = Path(os.path.normpath(root / name)), Path(os.path.normpath(into / name))
            target.parent.mkdir(parents=True, exist_ok=True)
            if not source.is_relative_to(root):  # bin/: console scripts, whose #! line names this Python
                first, _, rest = source.read_bytes().partition(b"\n")
                shebang = f"#!{venv / 'bin/python'}".encode() if first.startswith(b"#!") else first
                target.write_bytes(shebang + b"\n" + rest)
                shutil.copymode(source, target)
                continue
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)


def python_env(base: Path, packages: list[Requirement], course_lib_spec: str) -> Colab:
    """A fresh virtual environment with pip and ``packages`` (linked from this environment) and a kernel
    of its own; its set-up cells install course_lib from ``course_lib_spec`` (what ``COURSE_LIB``
    is set to)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True)
    python = base / "venv" / "bin" / "python"
    link_installed(installed_closure([Requirement("pip"), *packages]), base / "venv")
    main_bin = Path(sys.executable).parent.resolve()
    path = [str(python.parent)] + [
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != main_bin
    ]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH", "MPLBACKEND"}
    }
    env.update(PATH=os.pathsep.join(path), PYTHONNOUSERSITE="1", COURSE_LIB=course_lib_spec)
    spec = base / "kernels" / "colab"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Colab-like Python",
                "language": "python",
            }
        )
    )
    return Colab(python, spec.parent, env)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """course_lib's wheel (``make dist``), built once: every set-up cell of this module installs
    it, instead of pip building this checkout again for each notebook."""
    base = tmp_path_factory.mktemp("dist")
    dist = subprocess.run(["make", "--no-print-directory", "dist"], cwd=ROOT, capture_output=True, text=True)
    assert dist.returncode == 0, dist.stdout + dist.stderr
    [built] = (ROOT / "dist").glob("course_lib-*.whl")
    return Path(shutil.copy(built, base / built.name))


@pytest.fixture(scope="module")
def colab(tmp_path_factory, wheel):
    base = tmp_path_factory.mktemp("colab")
    yield python_env(base, COLAB_PACKAGES, str(wheel))
    remove_in_background(base)


@pytest.fixture(scope="module")
def wheel_only(tmp_path_factory, wheel):
    """The released wheel (``make dist``) in an environment with nothing but course_lib's runtime
    dependencies: no PyTorch, no JAX, no course tools."""
    base = tmp_path_factory.mktemp("wheel")
    runtime_deps = map(Requirement, tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    yield python_env(base, [Requirement("ipykernel"), *runtime_deps], str(wheel))
    remove_in_background(base)


def test_oracle_pins_are_exact():
    pins = {r.name: str(r.specifier) for r in ORACLES}
    assert set(pins) == {"torch", "jax"}, f"requirements-oracles.txt must pin torch and jax: {pins}"
    assert all(re.fullmatch(r"==[\w.]+", spec) for spec in pins.values()), f"pin torch and jax exactly: {pins}"


def test_colab_environment_lacks_the_course_tools(colab, tmp_path):
    for module in ["course_lib", "nbgrader", "pytest", "hypothesis"]:
        proc = colab.run("-c", f"import {module}", cwd=tmp_path)
        assert proc.returncode != 0, f"{module} leaked into the Colab-like environment"


def run_like_colab(colab: Colab, nb: nbformat.NotebookNode, name: str, tmp_path: Path) -> nbformat.NotebookNode:
    """Execute ``nb`` alone in an empty folder with a kernel of the Colab-like environment."""
    proc = colab.run("-m", "pip", "uninstall", "-y", "-q", "course_lib", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    content = tmp_path / "content"
    content.mkdir()
    nbformat.write(nb, content / name)
    km = KernelManager(kernel_name="colab", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(colab.kernels)]))
    client = NotebookClient(nb, km=km, timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(content)}})
    try:
        client.execute(env=colab.env)  # raises CellExecutionError, with the traceback, if a cell fails
    finally:
        km.shutdown_kernel(now=True)  # nbclient leaves a kernel it was handed running

    where = colab.run("-c", "import course_lib; print(course_lib.__file__)", cwd=tmp_path)
    assert where.returncode == 0, f"the set-up cell did not install course_lib:\n{where.stderr}"
    installed = Path(where.stdout.strip())
    assert installed.is_relative_to(colab.python.parent.parent) and not installed.is_relative_to(ROOT), (
        f"course_lib must be a plain install inside the environment, found it at {installed}"
    )
    assert sorted(p.name for p in content.iterdir()) == [name], "the notebook wrote files next to itself"
    return nb


def stderr_of(cell) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("name") == "stderr")


def after_setup(nb) -> list:
    code = [c for c in nb.cells if c.cell_type == "code"]
    return code[1:]  # the set-up cell's pip may warn about this machine's pip configuration


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_runs_like_in_colab(colab, path, tmp_path):
    nb = run_like_colab(colab, nbformat.read(path, as_version=4), path.name, tmp_path)
    for cell in after_setup(nb):
        assert not stderr_of(cell), f"a reader would see stderr under {cell.source[:80]!r}:\n{stderr_of(cell)}"


def test_every_student_notebook_runs_in_one_of_the_environments():
    assert set(NEEDS_PYTORCH) <= set(WITH_ORACLES), "a notebook that needs PyTorch must import it"
    assert set(WITH_ORACLES) | set(WITHOUT_PYTORCH) == set(STUDENT_NOTEBOOKS)


@pytest.mark.parametrize("path", WITH_ORACLES, ids=ids(WITH_ORACLES))
def test_student_notebook_runs_its_visible_tests_like_in_colab(colab, path, tmp_path):
    source = ROOT / "solutions" / path.parent.name / path.name
    assert source.exists(), f"{path.relative_to(ROOT)} has no nbgrader source {source.relative_to(ROOT)}"
    release = nbformat.read(path, as_version=4)
    assert graded_cells(release), "a student notebook without test cells"
    nb = run_like_colab(colab, fill_in(release, nbformat.read(source, as_version=4), {}), path.name, tmp_path)
    for cell in after_setup(nb):
        # nbgrader gives 0 points to a test cell that writes to stderr
        assert not stderr_of(cell), f"stderr under {cell.source[:80]!r}:\n{stderr_of(cell)}"


def test_the_wheel_alone_runs_the_set_up_cell_and_prints_its_version(wheel_only, tmp_path):
    import course_lib

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(SETUP_CELL)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    nb = run_like_colab(wheel_only, nb, "setup.ipynb", tmp_path)
    stdout = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stdout")
    assert stdout.strip().splitlines()[-1] == f"course_lib {course_lib.__version__}"


@pytest.mark.parametrize("path", WITHOUT_PYTORCH, ids=ids(WITHOUT_PYTORCH))
def test_student_notebook_passes_its_visible_tests_with_the_wheel_alone(wheel_only, path, tmp_path):
    source = nbformat.read(ROOT / "solutions" / path.parent.name / path.name, as_version=4)
    nb = run_like_colab(wheel_only, fill_in(nbformat.read(path, as_version=4), source, {}), path.name, tmp_path)
    for cell in after_setup(nb):
        assert not stderr_of(cell), f"stderr under {cell.source[:80]!r}:\n{stderr_of(cell)}"


@pytest.mark.parametrize("path", NEEDS_PYTORCH, ids=ids(NEEDS_PYTORCH))
def test_assignment_needing_pytorch_says_what_to_install_without_it(wheel_only, path, tmp_path):
    """Without PyTorch such an assignment stops at its Tools cell with one clear sentence, never
    with points for skipped tests."""
    source = nbformat.read(ROOT / "solutions" / path.parent.name / path.name, as_version=4)
    with pytest.raises(CellExecutionError) as stopped:
        run_like_colab(wheel_only, fill_in(nbformat.read(path, as_version=4), source, {}), path.name, tmp_path)
    assert stopped.value.ename == "ModuleNotFoundError", stopped.value
    assert "pip install torch" in stopped.value.evalue, stopped.value.evalue
    assert "def mlp_loss" in str(stopped.value), "it must stop at the Tools cell, before any part runs"


OPTIONAL = [p for p in CHAPTERS if p.stem.startswith(("05_", "09_", "10_", "13_"))]


@pytest.mark.parametrize("path", OPTIONAL, ids=ids(OPTIONAL))
def test_chapter_without_pytorch_or_jax_says_what_to_install(wheel_only, path, tmp_path):
    """A reader without PyTorch/JAX runs the whole chapter: no traceback, one line saying what to
    install, and every cell that needs them skipped with a note."""
    nb = run_like_colab(wheel_only, nbformat.read(path, as_version=4), path.name, tmp_path)
    shown = []
    for cell in after_setup(nb):
        assert not stderr_of(cell), f"stderr under {cell.source[:80]!r}:\n{stderr_of(cell)}"
        shown += [o.get("text", "") for o in cell.outputs if o.get("name") == "stdout"]
    text = "".join(shown)
    install_lines = [line for line in text.splitlines() if "pip install torch" in line]
    assert 1 <= len(install_lines) <= 2 and all(len(line) < 200 for line in install_lines), install_lines
    if path.stem.startswith(("10_", "13_")):
        assert "Skipped: this cell needs" in text


def test_runtime_dependencies_are_only_numpy_matplotlib_graphviz():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = sorted(Requirement(r).name for r in project["dependencies"])
    assert names == ["graphviz", "matplotlib", "numpy"], f"course_lib must need only what Colab has: {names}"
    assert not project.get("optional-dependencies"), "extras would not be installed by the set-up cell"


# Standard-library modules removed in Python 3.12 and 3.13 (Colab runs 3.12 or 3.13).
REMOVED_MODULES = {
    "distutils",
    "imp",
    "asynchat",
    "asyncore",
    "smtpd",
    "aifc",
    "audioop",
    "cgi",
    "cgitb",
    "chunk",
    "crypt",
    "imghdr",
    "mailcap",
    "msilib",
    "nis",
    "nntplib",
    "ossaudiodev",
    "pipes",
    "sndhdr",
    "spwd",
    "sunau",
    "telnetlib",
    "uu",
    "xdrlib",
    "lib2to3",
}
SOURCES = sorted((ROOT / "course_lib").rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=ids(SOURCES))
def test_course_lib_is_python_3_11_to_3_13(path):
    tree = ast.parse(path.read_text(), filename=str(path), feature_version=(3, 11))
    compile(tree, str(path), "exec")
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
    }
    assert not imported & REMOVED_MODULES, f"modules gone in Python 3.12/3.13: {imported & REMOVED_MODULES}"


COLAB_LINK = re.compile(r'href="(https://colab\.research\.google\.com/[^"]*)"')


REPOSITORY_LINK = re.compile(r'<a href="([^"]*)"[^>]*class="[^"]*btn-source-repository-button')


@pytest.mark.parametrize("page", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_launch_buttons_agree_with_the_course_identity(site, page):
    identity = course.load()
    html = (site / html_path(page)).read_text()
    expected = identity.colab(page.relative_to(ROOT).as_posix())
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    links = set(COLAB_LINK.findall(html))
    assert links == {expected}, f"Colab button of {html_path(page)}: expected {expected}, found {links}"
    assert set(REPOSITORY_LINK.findall(html)) == {identity.url}, f"repository button of {html_path(page)}"


def test_pages_without_a_notebook_have_no_colab_button(site):
    others = [
        p for p in site.rglob("*.html") if p.relative_to(site).as_posix() not in {html_path(nb) for nb in NOTEBOOKS}
    ]
    assert others, "no non-notebook pages found"
    with_button = [p.relative_to(site).as_posix() for p in others if COLAB_LINK.search(p.read_text())]
    assert with_button == [], f"Colab buttons on pages that are not notebooks: {with_button}"
