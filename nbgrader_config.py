"""nbgrader configuration for the course.

The course root is the folder holding this file (the repository root): instructors run
nbgrader commands from there. Source notebooks (with solutions and hidden tests) live in
``solutions/``, generated student versions in ``exercises/``. Students' work goes to
``submitted/``, ``autograded/`` and ``feedback/`` and the gradebook to ``gradebook.db``;
all four are git-ignored.
"""
import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "autodiff-from-scratch"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".pytest_cache"]

# A team shares one gradebook by pointing this at PostgreSQL, e.g.
# c.CourseDirectory.db_url = "postgresql://grader:secret@db.example.org/autodiff"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A cell that runs longer than this is interrupted and scores zero; grading carries on
# with the next cell, so one endless loop costs one part, not the whole notebook.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# A student who deleted a test cell gets it back at grading time (and is graded on it).
c.OverwriteCells.add_missing_cells = True
