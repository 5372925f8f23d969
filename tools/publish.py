"""Write the student-facing tree of the course: what the public repository holds.

    python tools/publish.py DEST          # or: make publish DEST=...

The instructor's repository (this one) holds the solutions and the hidden tests and stays
private. Students open, fork and launch in Colab a second, public repository, and this script
writes its files: the book, the student versions of the assignments, course_lib, the book's
configuration and a README for students. It copies an explicit list of paths, never the
solutions, tests, gradebook, submissions or instructor tooling, and then searches the result
for every line of every solution and hidden test: if one is found, it stops with an error.

DEST may be empty, a folder it wrote before, or a clone of the public repository (``.git``
is kept; a clone with uncommitted changes is refused, so nobody's work is lost).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import course  # tools/course.py: a script's folder is first on sys.path (tests: pytest's pythonpath)

ROOT = course.ROOT
MARKER = ".published-course"
# What the public tree holds: folders and files, relative to the repository root.
PUBLIC = [
    "book",
    "exercises",
    "course_lib",
    "benchmarks",
    "tools/mathjax_assets.py",
    "tools/book_site.py",
    "tools/notebook_answers.py",
    "tools/book_static",
    "_config.yml",
    "_toc.yml",
    "course.toml",
    "pyproject.toml",
    "MANIFEST.in",
    "Makefile",
    ".gitignore",
    "requirements.txt",
    "requirements.lock",
    "requirements-oracles.txt",
    "requirements-browser.txt",
    "LICENSE",
]
# Instructor tooling inside a public folder needs course_grader, which stays private: a Python
# file that imports it or runs it (``-m course_grader...``) is left out, and so is a helper
# module only such files use.
GRADER_IMPORT = re.compile(r"^\s*(from|import)\s+course_grader\b|[\"']course_grader\.\w+[\"']", re.M)


def private_files(names: list[str], root: Path) -> set[str]:
    """The Python files among ``names`` that import or run course_grader, with the local
    modules only they use (``benchmarks/handins.py``, which builds hand-ins for them)."""
    python = {name: (root / name).read_text(errors="replace") for name in names if name.endswith(".py")}
    private = {name for name, text in python.items() if GRADER_IMPORT.search(text)}
    for name in python:
        stem = Path(name).stem
        imports = re.compile(rf"^\s*(from|import)\s[^\n]*\b{re.escape(stem)}\b", re.M)
        users = {other for other, text in python.items() if other != name and imports.search(text)}
        if users and users <= private:
            private.add(name)
    return private


# Files the public tree holds under another name: the workflow that builds the book and deploys
# it to GitHub Pages runs in the public repository only (the instructor's has its own CI).
RENAMED = {"tools/github/book.yml": ".github/workflows/book.yml"}
STUDENT_README = ROOT / "tools" / "README.student.md"
SECRET = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)(.*?)### END \1", re.S)


def text_lines(path: Path) -> set[str]:
    """The stripped lines of a file; for a notebook, of its cells' sources and outputs."""
    text = path.read_text(errors="replace")
    if path.suffix == ".ipynb":
        import nbformat

        parts = []
        for cell in nbformat.reads(text, as_version=4).cells:
            parts.append(cell.source)
            for out in cell.get("outputs", []):
                parts.append(
                    out.get("text", "")
                    if "text" in out
                    else "\n".join(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
                )
        text = "\n".join(parts)
    return {line.strip() for line in text.splitlines() if line.strip()}


def secret_lines(root: Path = ROOT) -> set[str]:
    """Lines that only occur inside the solution or hidden-test regions of ``solutions/``.

    A line that also stands outside those regions (in a scaffold or a visible test) or in a
    file the public tree holds by design (course_lib, the book, the benchmarks) is public
    anyway and is not searched for; the student versions in exercises/ are not counted as
    public, they are what is searched."""
    import nbformat

    inside, public = set(), set()
    for path in sorted((root / "solutions").rglob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for match in SECRET.finditer(cell.source):
                inside |= {line.strip() for line in match.group(2).splitlines() if line.strip()}
            public |= {line.strip() for line in SECRET.sub("", cell.source).splitlines()}
    for name in public_files(root):
        if not name.startswith("exercises/"):
            public |= text_lines(root / name)
    return inside - public


def leaks(dest: Path, root: Path = ROOT) -> list[str]:
    """Every solution or hidden-test line (or nbgrader marker) found in a file under ``dest``."""
    secret = secret_lines(root)
    found = []
    for path in sorted(p for p in dest.rglob("*") if p.is_file() and ".git" not in p.relative_to(dest).parts):
        if "BEGIN SOLUTION" in (text := path.read_text(errors="replace")) or "BEGIN HIDDEN TESTS" in text:
            found.append(f"{path.relative_to(dest)}: an nbgrader solution/hidden-test marker")
        found += [f"{path.relative_to(dest)}: {line!r}" for line in sorted(text_lines(path) & secret)]
    return found


def _prepare(dest: Path) -> None:
    if dest.resolve().is_relative_to(ROOT) or ROOT.is_relative_to(dest.resolve()):
        raise SystemExit(
            f"ERROR: {dest} is inside the instructor repository (or contains it); "
            "publish to a folder of its own, e.g. ../autodiff-course-public"
        )
    if not dest.exists() or not any(dest.iterdir()):
        dest.mkdir(parents=True, exist_ok=True)
        return
    if (dest / ".git").exists():
        status = subprocess.run(["git", "status", "--porcelain"], cwd=dest, capture_output=True, text=True)
        if status.returncode != 0 or status.stdout.strip():
            raise SystemExit(
                f"ERROR: {dest} is a git clone with uncommitted changes; commit or "
                "stash them first (publishing replaces every file but .git)."
            )
    elif not (dest / MARKER).exists():
        raise SystemExit(
            f"ERROR: {dest} is not empty and was not written by make publish; "
            "choose an empty folder or a clone of the public repository."
        )
    for item in dest.iterdir():
        if item.name != ".git":
            shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()


def workflow_for(identity: course.Course, text: str) -> str:
    """The book workflow deploying from the public repository's branch (course.toml)."""
    text, found = re.subn(r"(?m)^(    branches: )\[main\]$", rf"\g<1>[{identity.branch}]", text)
    if found != 1:
        raise SystemExit("ERROR: tools/github/book.yml must have one `branches: [main]` line for the branch")
    return text


def public_files(root: Path = ROOT) -> list[str]:
    """The files under PUBLIC: those git tracks, or every file outside a git checkout."""
    listing = subprocess.run(["git", "ls-files", "-z", "--", *PUBLIC], cwd=root, capture_output=True, text=True)
    if listing.returncode == 0:
        names = [name for name in listing.stdout.split("\0") if name and (root / name).is_file()]
        private = private_files(names, root)
        return [name for name in names if name not in private]
    found = []
    for name in PUBLIC:
        path = root / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        found += [
            str(p.relative_to(root))
            for p in candidates
            if p.is_file() and not {"__pycache__", ".ipynb_checkpoints"} & set(p.parts) and p.suffix != ".pyc"
        ]
    private = private_files(found, root)
    return [name for name in found if name not in private]


def publish(dest: Path, root: Path = ROOT) -> list[str]:
    """Write the public tree into ``dest``; return the top-level entries written."""
    dest = Path(dest)
    _prepare(dest)
    for relative in public_files(root):
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target)
    identity = course.load(root)
    for source, renamed in RENAMED.items():
        (dest / renamed).parent.mkdir(parents=True, exist_ok=True)
        (dest / renamed).write_text(workflow_for(identity, (root / source).read_text()))
    written = [name for name in PUBLIC if (dest / name).exists()] + [r.split("/")[0] for r in RENAMED.values()]
    readme = STUDENT_README.read_text()
    start, end = readme.index(course.LINKS_START), readme.index(course.LINKS_END) + len(course.LINKS_END)
    (dest / "README.md").write_text(readme[:start] + course.readme_links(identity) + readme[end:])
    (dest / MARKER).write_text(f"Written by `make publish` from {identity.repository} @ {identity.release}.\n")
    found = leaks(dest, root)
    if found:
        raise SystemExit(
            "ERROR: the public tree would leak solutions or hidden tests; nothing is safe "
            "to push:\n  " + "\n  ".join(found[:20])
        )
    return written + ["README.md"]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    written = publish(Path(argv[0]))
    print(f"==> publish: wrote {', '.join(written)} into {argv[0]}")
    print("    searched it for every solution and hidden-test line: none found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
