# Automatic Differentiation from Scratch: set-up, book and tests.
#   make book   set up on first run, then build the book into _build/html
#   make test-engine  the inner loop while editing course_lib: engine and book-number tests
#   make test   set up on first run (plus the PyTorch/JAX oracles), then the whole suite
# Set-up is idempotent and exact: every package comes at the version requirements.lock pins
# (made by `make lock` with pip-compile); stamps in .venv record what is installed and are
# redone only when the requirement files or the lock change.

SHELL      := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON     ?= python3
VENV       := .venv
BIN        := $(CURDIR)/$(VENV)/bin
LOCK       := requirements.lock
PY         := $(BIN)/python
# nbgrader shells out to `alembic`, and jupyter-book to kernels: the venv's bin/ goes first.
export PATH := $(BIN):$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# MPLBACKEND is deliberately not set: kernels inherit it, and with Agg a notebook's
# plt.show() displays nothing. Inline figures come from the kernel's default backend.
unexport MPLBACKEND

BASE_STAMP    := $(VENV)/.stamp-base
ORACLE_STAMP  := $(VENV)/.stamp-oracles
BROWSER_STAMP := $(VENV)/.stamp-browser
INSTRUCTOR_STAMP := $(VENV)/.stamp-instructor
# JupyterHub's proxy (deploy/), from npm, installed into this project-local folder.
PROXY         := deploy/proxy/node_modules/.bin/configurable-http-proxy
# axe-core for the browser tests, from npm (tests/site/axe). Defined before the set-up targets
# that name it: make expands a rule's prerequisites when it reads the rule.
AXE           := tests/site/axe/node_modules/axe-core/axe.min.js
# The gradebook: one setting, DB_URL (default: the sqlite file gradebook.db), read by
# nbgrader_config.py. `make release DB_URL=postgresql+psycopg://...` passes it to nbgrader.
ifdef DB_URL
export DB_URL
endif
JOBS          ?= 2
# make test's workers: three on two cores. A third of the suite's time is spent waiting (browsers,
# kernels and servers starting, pip, time-outs the grader must reach): a third worker fills it.
TEST_JOBS     ?= 3
# pip, quietly: drop the "Location ... is ignored" notes some pip configurations print.
PIP           = $(PY) -m pip install -q
QUIET_PIP     = 2>&1 | { grep -v "^WARNING: Location" || true; }

.PHONY: book test test-engine fuzz fuzz-idioms execute setup setup-test setup-browser setup-instructor venv-support graphviz sandbox chromium postgresql \
        nodejs mathjax release roster autograde report similarity lint \
        configure lock dist publish instructor-only clean help

help:
	@echo "make book   - set up (first run) and build the book into _build/html"
	@echo "make test-engine - the inner loop: engine and book-number tests (no services; under 2 minutes)"
	@echo "make test   - set up (first run, with PyTorch/JAX oracles) and run the whole suite"
	@echo "make fuzz [FUZZ_EXAMPLES=2000] - the compiled path's differential fuzzer, many programs (not in the quick loop)"
	@echo "make fuzz-idioms [IDIOM_ROUNDS=1 IDIOM_SEED=...] - every hand-in of tests/mistakes in random idioms, graded vs Jupyter"
	@echo "make setup-browser - Chromium, Selenium and axe-core for the browser tests (CI installs them)"
	@echo "make setup-instructor - PostgreSQL, psycopg, JupyterHub and its proxy (deploy/; make test needs them)"
	@echo "make release, make roster, make autograde [DB_URL=...] - instructor commands (see README)"
	@echo "make report [DB_URL=...], make similarity ASSIGNMENT=... - the class report in report/ (instructors only)"
	@echo "make configure REPO=owner/name [REF=tag] - retarget the course (course.toml)"
	@echo "make publish DEST=dir - write the student-facing tree (no solutions, no hidden tests)"
	@echo "make dist   - build course_lib's wheel and sdist into dist/"
	@echo "make lock   - re-pin requirements.lock after changing a requirements file"
	@echo "make lint   - ruff, mypy and the workflows (actionlint, zizmor); make test runs it"
	@echo "make execute [NOTEBOOKS=...] - re-execute chapters and solutions in place, then regenerate exercises/"

setup: venv-support graphviz $(BASE_STAMP) mathjax
setup-test: setup sandbox $(ORACLE_STAMP)
setup-browser: setup chromium $(BROWSER_STAMP) $(if $(wildcard tests/site/axe/package.json),$(AXE))
setup-instructor: setup postgresql $(INSTRUCTOR_STAMP) $(PROXY)

# $(call apt_install,what,test command,Debian packages,how to install it without apt)
define apt_install
	@if { $(2); } >/dev/null 2>&1; then \
	  echo "==> $(1): found"; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "==> $(1): missing, installing the Debian package(s) '$(3)' with apt-get"; \
	  SUDO=""; if [ "$$(id -u)" -ne 0 ]; then SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(3) >/dev/null \
	    || { echo "ERROR: apt-get could not install $(3). Install it by hand (sudo apt-get install $(3)) and re-run."; exit 1; }; \
	  echo "==> $(1): installed"; \
	else \
	  echo "ERROR: $(1) is missing and apt-get is not available on this machine."; \
	  echo "       Install it with your system's package manager and re-run, e.g. $(4)"; \
	  exit 1; \
	fi
endef

# Debian and Ubuntu ship Python's venv module separately (python3-venv).
venv-support:
	$(call apt_install,the venv module of $(PYTHON),$(PYTHON) -c 'import ensurepip',python3-venv,\
	  reinstall Python from python.org or your package manager with venv/ensurepip included)

graphviz:
	$(call apt_install,graphviz (the 'dot' program),dot -V,graphviz,\
	  macOS: brew install graphviz; Fedora: sudo dnf install graphviz; conda: conda install -c conda-forge graphviz)

# Hand-ins run in a bubblewrap sandbox when graded (course_grader; README, "Security model").
sandbox:
	$(call apt_install,bubblewrap (the 'bwrap' sandbox for grading),bwrap --version,bubblewrap,\
	  grading needs Linux; elsewhere pass --unsafe-no-sandbox to python -m course_grader.grading for trusted hand-ins only)

chromium:
	$(call apt_install,Chromium and chromedriver,command -v chromium && command -v chromedriver,chromium chromium-driver,\
	  macOS: brew install --cask chromium chromedriver; Fedora: sudo dnf install chromium chromedriver)

# The gradebook server for a team or a hub, and the server the tests start (tests/postgres.py).
postgresql:
	$(call apt_install,PostgreSQL (initdb and pg_ctl),ls /usr/lib/postgresql/*/bin/initdb,postgresql,\
	  macOS: brew install postgresql; Fedora: sudo dnf install postgresql-server)

nodejs:
	$(call apt_install,Node.js and npm (for JupyterHub's proxy),command -v npm,nodejs npm,\
	  macOS: brew install node; Fedora: sudo dnf install nodejs npm)

# axe-core for the browser tests' WCAG checks (tests/site/test_accessibility.py), from npm into a
# project-local folder, exactly as tests/site/axe/package-lock.json pins it. The students' copy
# (make publish) has no tests/, so there setup-browser skips it.
$(AXE): tests/site/axe/package.json tests/site/axe/package-lock.json | nodejs
	@echo "==> set-up: installing axe-core (npm ci in tests/site/axe)"
	@cd tests/site/axe && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

# npm ci installs exactly deploy/proxy/package-lock.json.
$(PROXY): deploy/proxy/package.json deploy/proxy/package-lock.json | nodejs
	@echo "==> set-up: installing configurable-http-proxy (npm ci in deploy/proxy)"
	@cd deploy/proxy && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

# MathJax is served from the built book (offline math, no CDN): copied once from the pinned
# django-static-mathjax package (see tools/mathjax_assets.py).
mathjax: $(BASE_STAMP)
	@$(PY) tools/mathjax_assets.py

$(BASE_STAMP): requirements.txt $(LOCK) pyproject.toml | venv-support
	@echo "==> set-up: virtual environment in $(VENV) (Python: $$($(PYTHON) --version 2>&1))"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "==> set-up: installing the book/grading stack (requirements.txt) at the versions of $(LOCK)"
	@$(PIP) -U pip -c $(LOCK) $(QUIET_PIP)
	@$(PIP) -r requirements.txt -c $(LOCK) $(QUIET_PIP)
	@echo "==> set-up: installing course_lib (editable) into $(VENV)"
	@$(PIP) --no-deps -e . $(QUIET_PIP)
	@touch $@

$(ORACLE_STAMP): requirements-oracles.txt $(LOCK) $(BASE_STAMP)
	@echo "==> set-up: installing the test oracles (PyTorch CPU, JAX) from requirements-oracles.txt"
	@$(PIP) -r requirements-oracles.txt -c $(LOCK) $(QUIET_PIP)
	@touch $@

$(INSTRUCTOR_STAMP): requirements-instructor.txt $(LOCK) $(BASE_STAMP)
	@echo "==> set-up: installing the instructor extra (psycopg, JupyterHub) from requirements-instructor.txt"
	@$(PIP) -r requirements-instructor.txt -c $(LOCK) $(QUIET_PIP)
	@touch $@

$(BROWSER_STAMP): requirements-browser.txt $(LOCK) $(BASE_STAMP)
	@echo "==> set-up: installing Selenium for the browser tests from requirements-browser.txt"
	@$(PIP) -r requirements-browser.txt -c $(LOCK) $(QUIET_PIP)
	@touch $@

book: setup
	@echo "==> book: building _build/html (strict: warnings are errors)"
	@rm -rf _build/html _build/.doctrees
	@time $(BIN)/jupyter-book build . -W -n --keep-going
	@echo "==> book: open _build/html/index.html"

test: instructor-only setup-test setup-instructor lint
	@echo "==> test: engine tests, notebook checks (nbval) and the nbgrader pipeline on $(TEST_JOBS) workers"
	@time OMP_NUM_THREADS=1 $(PY) -m pytest tests book solutions -n $(TEST_JOBS) --dist loadscope \
	  --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	  -o python_files='test_*.py' -q -rfEs --durations=15

# The loop to run while editing course_lib: the engine's tests (unit, property, PyTorch/JAX
# oracles) and the tests that recompute every number the chapters print. No services, no
# notebooks executed, no book built; `make test` stays the whole proof.
ENGINE_TESTS := tests/engine $(wildcard tests/book/test_numbers_*.py) tests/book/test_plan_numbers_scalar.py
# One BLAS/OpenMP thread per worker (as the grader's sandbox runs hand-ins): with a worker per
# core, PyTorch's own threads only contend. `make test` does the same.
test-engine: instructor-only setup $(ORACLE_STAMP)
	@echo "==> test-engine: engine and book-number tests on $(JOBS) workers"
	@time OMP_NUM_THREADS=1 $(PY) -m pytest $(ENGINE_TESTS) -n $(JOBS) -q -rfEs

# The compiled path's differential fuzzer (tests/engine/test_compiled_fuzz.py) with many
# programs per property instead of make test's few dozen: not part of the quick loop.
FUZZ_EXAMPLES ?= 2000
fuzz: instructor-only setup $(ORACLE_STAMP)
	@echo "==> fuzz: $(FUZZ_EXAMPLES) random programs per property against the eager engine"
	@time FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) OMP_NUM_THREADS=1 $(PY) -m pytest tests/engine/test_compiled_fuzz.py tests/engine/test_loop_fuzz.py -n $(JOBS) -q -rfEs

# The grader's differential fuzzer of honest idioms (tests/assignments/test_idioms.py): the
# solution, the honest hand-in and every typical mistake of every assignment, rewritten in a
# random handful of idioms each round, graded in the sandbox and run in Jupyter (about 6
# minutes a round on 2 cores). make test runs its quick cases.
IDIOM_ROUNDS ?= 1
IDIOM_SEED   ?= $(shell date +%s)
fuzz-idioms: instructor-only setup-test
	@echo "==> fuzz-idioms: $(IDIOM_ROUNDS) round(s), IDIOM_SEED=$(IDIOM_SEED) (to repeat a run)"
	@time IDIOM_ROUNDS=$(IDIOM_ROUNDS) IDIOM_SEED=$(IDIOM_SEED) OMP_NUM_THREADS=1 $(PY) -m pytest tests/assignments/test_idioms.py \
	  -k random_idioms -n $(JOBS) -q -rfEs

# ruff (lint and format) and mypy, configured in pyproject.toml, then the GitHub Actions
# workflows: this repository's CI and the book workflow `make publish` gives the public tree
# (actionlint for syntax, expressions and types; zizmor, offline, for security: unpinned
# actions, broad permissions, kept credentials, template injection). `make test` runs it first.
WORKFLOWS := $(wildcard .github/workflows/*.yml tools/github/*.yml)
lint: setup
	@echo "==> lint: ruff check, ruff format --check, mypy, actionlint, zizmor"
	@$(BIN)/ruff check --quiet . && $(BIN)/ruff format --check --quiet . && $(BIN)/mypy
	@$(BIN)/actionlint $(WORKFLOWS)
	@$(BIN)/zizmor --offline --persona=pedantic --quiet $(WORKFLOWS)

# Chapters and solutions are committed executed (nbval checks the outputs): after a change to
# course_lib that alters what they print, re-execute them. exercises/ is generated from the
# executed solutions, so it is regenerated too.
execute: instructor-only setup-test
	@$(PY) tools/execute.py $(NOTEBOOKS)
	@$(MAKE) --no-print-directory release

# nbgrader --force replaces exercises/<assignment>/ whole. Anything in it that git does not
# have as committed (a student's answers, a file they saved there) is copied to backups/ first.
release: instructor-only setup
	@echo "==> release: regenerating every student version in exercises/ from solutions/"
	@stamp=$$(date -u +%Y%m%dT%H%M%SZ); \
	for d in solutions/*/; do a=$$(basename $$d); echo "  - $$a"; \
	  if [ -d "exercises/$$a" ] && { ! git rev-parse --git-dir >/dev/null 2>&1 || \
	       [ -n "$$(git status --porcelain --untracked-files=all -- "exercises/$$a")" ]; }; then \
	    mkdir -p "backups/$$stamp" && cp -r "exercises/$$a" "backups/$$stamp/" && \
	    echo "    exercises/$$a had changes git has not committed: a copy is in backups/$$stamp/$$a/"; \
	  fi; done; \
	$(BIN)/nbgrader generate_assignment '*' --force --log-level=WARN

# The class list, from the LMS's CSV export, into the gradebook before any grading:
#   make roster ROSTER=students.csv [DB_URL=...]
roster: instructor-only setup
	@test -n "$(ROSTER)" || { echo "usage: make roster ROSTER=<the LMS's class list as CSV> [DB_URL=...]"; exit 2; }
	@$(PY) -m course_grader.database roster "$(ROSTER)"

# One setting (course.toml) names the public repository, branch and release; every set-up
# cell, launch button and README link is generated from it. Idempotent.
#   make configure REPO=<owner>/<name> [BRANCH=main] [REF=<tag>] [SITE=<the book's URL>]
configure: setup
	@$(PY) tools/course.py configure $(if $(REPO),--repo "$(REPO)") $(if $(BRANCH),--branch "$(BRANCH)") \
	  $(if $(REF),--ref "$(REF)") $(if $(filter command line,$(origin SITE)),--site "$(SITE)")
	@$(MAKE) --no-print-directory release
	@$(PY) tools/course.py check

# make autograde [JOBS=n] [DB_URL=...]: n hand-ins at a time (default: the number of cores).
autograde: instructor-only setup sandbox
	@echo "==> autograde: grading submissions/<student>/<assignment>.ipynb into grades.csv"
	@$(PY) -m course_grader.grading submissions $(if $(filter command line,$(origin JOBS)),--jobs $(JOBS)) $(GRADE_FLAGS)

# After autograde: the class report (report/, for instructors only: it names students), read from
# the gradebook (DB_URL as for grading), grades.csv and autograded/.
report: instructor-only setup
	@$(PY) -m course_grader.report

# Pairs of hand-ins whose answer cells are alike, with the shared code side by side (report/).
# Never changes a grade. make similarity ASSIGNMENT=<assignment> [THRESHOLD=0.7]
similarity: instructor-only setup $(INSTRUCTOR_STAMP)
	@test -n "$(ASSIGNMENT)" || { echo "usage: make similarity ASSIGNMENT=<assignment, e.g. ps01_finite_differences> [THRESHOLD=0.7]"; exit 2; }
	@$(PY) -m course_grader.similarity "$(ASSIGNMENT)" $(if $(THRESHOLD),--threshold $(THRESHOLD))

# The published (student) tree has no solutions/ and no tests/: say so instead of failing oddly.
instructor-only:
	@test -d solutions || { echo "ERROR: this is the students' copy of the course (made by"; \
	  echo "       'make publish'): it has no solutions/ and no tests/. Tests, releases and grading"; \
	  echo "       run in the instructor's repository."; exit 1; }

# One lock for every requirements file: exact versions of the whole stack, transitive ones
# included. Run after changing any requirements*.txt; set-up then installs exactly this.
LOCK_INPUTS := requirements.txt requirements-oracles.txt requirements-browser.txt benchmarks/requirements.txt \
               requirements-instructor.txt
# pip-compile pins what resolves on the Python it runs on: run it on the oldest supported one
# (Python 3.11.x; a test checks every pin's Requires-Python against pyproject's floor).
lock: venv-support
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(BIN)/pip-compile || $(PIP) "$$(grep '^pip-tools==' requirements.txt)" $(QUIET_PIP)
	@echo "==> lock: pip-compile $(LOCK_INPUTS) -> $(LOCK)"
	@# pip-compile keeps the pins of its output file where they still satisfy the inputs: start
	@# from the current lock, so adding a requirement pins it without upgrading everything else.
	@cp $(LOCK) $(LOCK).new
	@$(BIN)/pip-compile --quiet --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
	  --no-header -o $(LOCK).new $(LOCK_INPUTS) $(QUIET_PIP)
	@# Local version labels (torch's "+cpu" wheel on this machine) are dropped: "==2.13.0" still
	@# selects that wheel where it is offered, and the lock stays valid on plain PyPI.
	@{ echo "# Exact versions of every package of the stack (make lock; pip-compile $$($(BIN)/pip-compile --version | cut -d' ' -f3))."; \
	  echo "# Inputs: $(LOCK_INPUTS). Set-up installs each input with -c $(LOCK)."; \
	  sed -E 's/^([A-Za-z0-9_.-]+==[^ +]+)\+[A-Za-z0-9.]+/\1/' $(LOCK).new; } > $(LOCK) && rm $(LOCK).new

# course_lib's wheel and sdist, built with the standard `build` tool from the locked set-up.
dist: setup
	@rm -rf dist && $(PY) -m build --no-isolation --outdir dist . >/dev/null && ls dist

# The student-facing tree: book, exercises, course_lib, configs, a README for students;
# no solutions, hidden tests, gradebook, submissions or instructor tooling.
publish: setup
	@test -n "$(DEST)" || { echo "usage: make publish DEST=<folder for the public repository>"; exit 2; }
	@$(PY) tools/publish.py "$(DEST)"

clean:
	rm -rf _build .pytest_cache
