"""The course's identity (``course.toml``) and every place generated from it.

One setting names the public repository (owner/name), its branch, the release (a git tag)
the notebooks install course_lib from and the book's public URL (by default the GitHub Pages
address of the repository, ``https://<owner>.github.io/<name>/``). From it come each
notebook's set-up cell, the book's repository and launch buttons and its base URL
(``_config.yml``: canonical links, sitemap, 404 page) and the links in ``README.md``::

    python tools/course.py configure --repo OWNER/NAME [--branch B] [--ref TAG] [--site URL]
    python tools/course.py check     # exit 1 and list every place that disagrees

``configure`` is idempotent: a second run changes nothing. It rewrites the set-up cells of
``book/`` and ``solutions/``; ``make configure`` then regenerates ``exercises/`` with nbgrader,
so the student versions are never edited by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = "course.toml"
SETUP_MARK = "# Set-up:"
LINKS_START, LINKS_END = "<!-- course-links:start -->", "<!-- course-links:end -->"
FIRST_CHAPTER = "book/01_derivatives_three_ways.ipynb"
FIRST_ASSIGNMENT = "exercises/ps01_finite_differences/ps01_finite_differences.ipynb"


@dataclass(frozen=True)
class Course:
    repository: str  # owner/name on GitHub
    branch: str
    release: str  # the tag the notebooks install course_lib from
    site: str = ""  # the book's public URL; empty: the repository's GitHub Pages address

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}"

    @property
    def site_url(self) -> str:
        """Where the book is read: ``site`` if set, else the GitHub Pages address of the repository
        (a project site under ``/<name>/``, or the root for a repository named ``<owner>.github.io``)."""
        if self.site:
            return self.site.rstrip("/") + "/"
        owner, name = self.repository.split("/")
        host = f"{owner.lower()}.github.io"
        return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"

    @property
    def install_spec(self) -> str:
        return f"git+{self.url}@{self.release}"

    def colab(self, path: str) -> str:
        return f"https://colab.research.google.com/github/{self.repository}/blob/{self.branch}/{path}"

    def validate(self) -> Course:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+", self.repository):
            raise ValueError(f"repository must look like owner/name, got {self.repository!r}")
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", self.branch):
            raise ValueError(f"branch {self.branch!r} is not a valid branch name")
        if self.release in {self.branch, "main", "master", "HEAD"} or not re.fullmatch(
            r"v\d+(\.\d+)*[A-Za-z0-9._-]*|[0-9a-f]{40}", self.release
        ):
            raise ValueError(
                f"release must be a tag such as v0.1.0 (or a full commit hash), never a "
                f"moving branch: got {self.release!r}"
            )
        if self.site and not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~%/-]*)?", self.site):
            raise ValueError(f"site must be the book's URL, such as https://example.org/course/: got {self.site!r}")
        return self


def load(root: Path = ROOT) -> Course:
    data = tomllib.loads((root / SETTINGS).read_text())["course"]
    return Course(data["repository"], data["branch"], data["release"], data.get("site", "")).validate()


def save(course: Course, root: Path = ROOT) -> None:
    path = root / SETTINGS
    text = path.read_text()
    for key in ("repository", "branch", "release", "site"):
        line = f'{key} = "{getattr(course, key)}"'
        text, found = re.subn(rf'(?m)^{key} = ".*"$', line, text)
        if not found:
            text = text.rstrip("\n") + "\n" + line + "\n"
    path.write_text(text)


def setup_cell(course: Course) -> str:
    """The first code cell of every notebook: installs course_lib where it is missing."""
    return "\n".join(
        [
            f"{SETUP_MARK} install course_lib, the course's engine, when it is missing (as in Colab).",
            "import importlib, importlib.util, os, subprocess, sys",
            f'COURSE_LIB = os.environ.get("COURSE_LIB", "{course.install_spec}")',
            'if importlib.util.find_spec("course_lib") is None:',
            '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", COURSE_LIB], check=True)',
            "    importlib.invalidate_caches()",
            "import course_lib",
            'print("course_lib", course_lib.__version__)',
        ]
    )


def readme_links(course: Course) -> str:
    return "\n".join(
        [
            LINKS_START,
            f"- Public repository: <{course.url}> (branch `{course.branch}`)",
            f"- The book online: <{course.site_url}> (GitHub Pages, deployed by the public repository's workflow)",
            f"- Open the first chapter in Colab: <{course.colab(FIRST_CHAPTER)}>",
            f"- Open the first assignment in Colab: <{course.colab(FIRST_ASSIGNMENT)}>",
            f'- Install the engine alone: `pip install "{course.install_spec}"`',
            LINKS_END,
        ]
    )


def toc_pages(root: Path = ROOT) -> list[Path]:
    """The book's pages in the order of ``_toc.yml``: its root, then every listed file."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())

    def files(node) -> list[str]:
        if isinstance(node, dict):
            return ([node["file"]] if "file" in node else []) + [f for value in node.values() for f in files(value)]
        if isinstance(node, list):
            return [f for item in node for f in files(item)]
        return []

    pages = []
    for entry in [toc["root"], *files(toc.get("parts", toc.get("chapters", [])))]:
        found = [root / f"{entry}{suffix}" for suffix in (".ipynb", ".md") if (root / f"{entry}{suffix}").exists()]
        if not found:
            raise ValueError(f"_toc.yml lists '{entry}', which is neither {entry}.ipynb nor {entry}.md")
        pages.append(found[0])
    return pages


def notebooks(root: Path = ROOT, folders=("book", "solutions", "exercises")) -> list[Path]:
    return sorted(
        p for folder in folders for p in (root / folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
    )


def setup_cell_of(nb):
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or not code[0].source.startswith(SETUP_MARK):
        raise ValueError(f"its first code cell is not the set-up cell (it must start with {SETUP_MARK!r})")
    return code[0]


def _configure_notebook(path: Path, course: Course) -> bool:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    cell = setup_cell_of(nb)
    source = setup_cell(course)
    if cell.source == source:
        return False
    cell.source = source
    if cell.execution_count is not None:  # an executed notebook shows what the cell prints
        import course_lib

        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"course_lib {course_lib.__version__}\n")]
    nbformat.write(nb, path)
    return True


def _configure_text(text: str, course: Course, kind: str) -> str:
    if kind == "config":
        text = re.sub(r"(?m)^(repository:\n  url: ).*$", rf"\g<1>{course.url}", text)
        text = re.sub(r"(?m)^(repository:\n  url: .*\n  branch: ).*$", rf"\g<1>{course.branch}", text)
        # html.baseurl: the only `baseurl:` key of _config.yml, two spaces in (under html:).
        return re.sub(r"(?m)^(  baseurl: ).*$", rf"\g<1>{course.site_url}", text)
    start, end = text.index(LINKS_START), text.index(LINKS_END) + len(LINKS_END)
    return text[:start] + readme_links(course) + text[end:]


TEXT_FILES = {"_config.yml": "config", "README.md": "readme"}


def configure(course: Course, root: Path = ROOT) -> list[str]:
    """Write ``course`` into course.toml and every place generated from it; return what changed."""
    course.validate()
    changed = []
    if load(root) != course:
        save(course, root)
        changed.append(SETTINGS)
    for name, kind in TEXT_FILES.items():
        path = root / name
        text = path.read_text()
        if (new := _configure_text(text, course, kind)) != text:
            path.write_text(new)
            changed.append(name)
    for path in notebooks(root, ("book", "solutions")):
        if _configure_notebook(path, course):
            changed.append(str(path.relative_to(root)))
    return changed


def check(root: Path = ROOT) -> list[str]:
    """Every place that disagrees with course.toml (an empty list when all agree)."""
    import nbformat
    import yaml

    course = load(root)
    problems = []
    config = yaml.safe_load((root / "_config.yml").read_text())
    if config["repository"] != {"url": course.url, "branch": course.branch}:
        problems.append(f"_config.yml: repository is {config['repository']}")
    if (baseurl := config.get("html", {}).get("baseurl")) != course.site_url:
        problems.append(f"_config.yml: html.baseurl is {baseurl!r}, not {course.site_url!r}")
    readme = (root / "README.md").read_text()
    if readme_links(course) not in readme:
        problems.append("README.md: the links between the course-links markers are out of date")
    for path in notebooks(root):
        try:
            source = setup_cell_of(nbformat.read(path, as_version=4)).source
        except ValueError as error:
            problems.append(f"{path.relative_to(root)}: {error}")
            continue
        if source != setup_cell(course):
            problems.append(f"{path.relative_to(root)}: the set-up cell differs from course.toml's")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser("configure", help="retarget the course (idempotent)")
    conf.add_argument("--repo", help="owner/name of the public repository")
    conf.add_argument("--branch")
    conf.add_argument("--ref", help="the release tag the notebooks install, e.g. v0.2.0")
    conf.add_argument(
        "--site", help="the book's public URL when it is not https://<owner>.github.io/<name>/ ('' resets it)"
    )
    sub.add_parser("check", help="list every place that disagrees with course.toml")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check()
        for line in problems:
            print(f"- {line}")
        print("course identity:", "out of date, run `make configure`" if problems else "consistent")
        return 1 if problems else 0
    current = load()
    try:
        course = replace(
            current,
            **{k: v for k, v in {"repository": args.repo, "branch": args.branch, "release": args.ref}.items() if v},
            **({"site": args.site} if args.site is not None else {}),
        )
        changed = configure(course)
    except ValueError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    print(f"==> configure: {course.repository} @ {course.release} (branch {course.branch}), book at {course.site_url}")
    print("    changed: " + (", ".join(changed) if changed else "nothing, already configured"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
