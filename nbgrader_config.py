"""nbgrader configuration for the course.

The course root is the folder holding this file (the repository root): instructors run
nbgrader commands from there. Source notebooks (with solutions and hidden tests) live in
``solutions/``, generated student versions in ``exercises/``. Students' work goes to
``submitted/``, ``autograded/`` and ``feedback/`` and the gradebook to ``gradebook.db`` (or DB_URL);
all four are git-ignored.
"""

import os
import sys

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "autodiff-from-scratch"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# rules.toml (the course_lib functions students write themselves, course_grader/rules.py) is
# the grader's: it stays out of the student version.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".pytest_cache", "rules.toml"]

# The gradebook is one setting, the environment variable DB_URL (`make release DB_URL=...`):
# unset, the sqlite file gradebook.db here; for a team or a hub, PostgreSQL, e.g.
# DB_URL=postgresql+psycopg://grader:secret@db.example.org/autodiff (postgresql:// works too).
# course_grader/ (instructor tooling) sits beside this file; a throw-away copy of this file
# alone (as some tests make) keeps nbgrader's default, the sqlite file, and no exchange.
if c.CourseDirectory.root not in sys.path:
    sys.path.insert(0, c.CourseDirectory.root)
try:
    from course_grader.database import gradebook_url
except ModuleNotFoundError:
    if os.environ.get("DB_URL"):
        raise
else:
    try:
        c.CourseDirectory.db_url = gradebook_url(os.environ.get("DB_URL"), c.CourseDirectory.root)
    except ValueError as error:  # stop here: nbgrader would go on with a default configuration
        sys.exit(f"ERROR: {error}")
    # On a hub, `nbgrader collect` takes a hand-in only from the Unix user it is named after:
    # one submitted under a classmate's name is quarantined, never graded (deploy/README.md).
    c.ExchangeFactory.collect = "course_grader.exchange.OwnerCheckedCollect"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A cell that runs longer than this is interrupted and scores zero; grading carries on
# with the next cell, so one endless loop costs one part, not the whole notebook.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# A student who deleted a test cell gets it back at grading time (and is graded on it).
c.OverwriteCells.add_missing_cells = True
