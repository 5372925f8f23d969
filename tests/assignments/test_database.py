"""The gradebook as one setting (DB_URL), and the class list from an LMS, on a real PostgreSQL."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from commands import MAKE_ENV, make
from nbgrader.api import Gradebook
from paths import ROOT

from course_grader.database import RosterError, course_config, gradebook_url, import_roster, read_roster

PS = "ps01_finite_differences"
COURSE_ID = "autodiff-from-scratch"


# -- one URL, either spelling ------------------------------------------------------------------


def test_unset_or_empty_means_the_sqlite_file_in_the_course(tmp_path):
    assert gradebook_url(None, tmp_path) == f"sqlite:///{tmp_path.resolve()}/gradebook.db"
    assert gradebook_url("  ", tmp_path) == f"sqlite:///{tmp_path.resolve()}/gradebook.db"
    assert gradebook_url("sqlite:////srv/course/gradebook.db") == "sqlite:////srv/course/gradebook.db"


@pytest.mark.parametrize("spelling", ["postgresql", "postgres", "postgresql+psycopg"])
def test_postgresql_in_either_spelling_is_read_with_psycopg_3(spelling):
    url = gradebook_url(f"{spelling}://grader:s3cret@db.example.org:5433/autodiff")
    assert url == "postgresql+psycopg://grader:s3cret@db.example.org:5433/autodiff"


def test_the_psycopg2_spelling_says_which_to_use():
    with pytest.raises(ValueError, match=r"'psycopg2'.*postgresql\+psycopg://.*requirements-instructor"):
        gradebook_url("postgresql+psycopg2://grader@db/autodiff")


def test_a_malformed_url_says_what_a_url_looks_like():
    with pytest.raises(ValueError, match=r"not a database URL.*postgresql\+psycopg://"):
        gradebook_url("db.example.org/autodiff")


def test_nbgrader_config_reads_db_url_from_the_environment(monkeypatch):
    monkeypatch.setenv("DB_URL", "postgresql://grader@db.example.org/autodiff")
    assert course_config(ROOT).CourseDirectory.db_url == "postgresql+psycopg://grader@db.example.org/autodiff"
    monkeypatch.delenv("DB_URL")
    assert course_config(ROOT).CourseDirectory.db_url == f"sqlite:///{ROOT}/gradebook.db"


# -- the class list ------------------------------------------------------------------------------


def test_a_moodle_export_is_read(tmp_path):
    csv = tmp_path / "moodle.csv"
    csv.write_text(
        "\ufeffFirst name,Last name,Username,Email address\n"
        "Ada,Lovelace,alovelace,ada@example.org\nAlan, Turing ,aturing,\n"
    )
    assert [(s.id, s.first_name, s.last_name, s.email) for s in read_roster(csv)] == [
        ("alovelace", "Ada", "Lovelace", "ada@example.org"),
        ("aturing", "Alan", "Turing", None),
    ]


def test_a_canvas_export_is_read_without_its_points_possible_row(tmp_path):
    csv = tmp_path / "canvas.csv"
    csv.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,ps01 (123)\n"
        "    Points Possible,,,,,10\n"
        '"Hopper, Grace",4711,s1,ghopper,A,\n'
    )
    [student] = read_roster(csv)
    assert (student.id, student.first_name, student.last_name) == ("ghopper", "Grace", "Hopper")


def test_every_problem_of_a_class_list_is_reported_and_nothing_is_imported(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text("username,email\nada,\n,x@example.org\nada,\nbob smith,\n../eve,\n")
    with pytest.raises(RosterError) as error:
        read_roster(csv)
    message = str(error.value)
    assert "nothing imported" in message and "line 3: empty 'username'" in message
    assert "line 4: 'ada' again (first on line 2)" in message
    assert "line 5: 'bob smith' cannot be a student id" in message and "line 6: '../eve'" in message


def test_a_list_without_an_id_column_names_its_columns_and_the_option(tmp_path):
    csv = tmp_path / "names.csv"
    csv.write_text("Name,Mail\nAda,ada@example.org\n")
    with pytest.raises(RosterError, match=r"no student id column.*\['Name', 'Mail'\].*--id-column"):
        read_roster(csv)
    assert [s.id for s in read_roster(csv, id_column="mail")] == ["ada@example.org"]


# -- a real PostgreSQL server --------------------------------------------------------------------


def test_roster_import_into_postgresql_is_idempotent(postgres, tmp_path):
    url = postgres("roster")
    csv = tmp_path / "class.csv"
    csv.write_text("username,first name,last name\n" + "".join(f"s{i:03d},First{i},Last{i}\n" for i in range(40)))
    students = read_roster(csv)
    assert import_roster(students, url, COURSE_ID) == {"added": 40, "updated": 0, "unchanged": 0}
    assert import_roster(students, url, COURSE_ID) == {"added": 0, "updated": 0, "unchanged": 40}
    csv.write_text(csv.read_text().replace("First7,", "Seventh,"))
    assert import_roster(read_roster(csv), url, COURSE_ID) == {"added": 0, "updated": 1, "unchanged": 39}
    with Gradebook(url, COURSE_ID) as gradebook:
        assert len(gradebook.students) == 40
        assert gradebook.find_student("s007").first_name == "Seventh"


@pytest.fixture()
def course_copy(tmp_path) -> Path:
    """A course root that `make` can run in: one assignment, the Makefile and its inputs
    (modification times kept, so the shared .venv counts as set up) and the shared .venv."""
    copy = tmp_path / "course"
    copy.mkdir()
    names = ["Makefile", "nbgrader_config.py", "pyproject.toml", "requirements.lock"] + [
        p.name for p in ROOT.glob("requirements*.txt")
    ]
    for name in names:
        shutil.copy2(ROOT / name, copy / name)
    for folder in ["course_grader", "tools", "benchmarks", f"solutions/{PS}", f"exercises/{PS}"]:
        shutil.copytree(
            ROOT / folder, copy / folder, copy_function=shutil.copy2, ignore=shutil.ignore_patterns("__pycache__")
        )
    (copy / ".venv").symlink_to(ROOT / ".venv")
    (copy / "_vendor").symlink_to(ROOT / "_vendor")
    return copy


def test_make_release_and_make_roster_write_to_the_db_url_they_are_given(postgres, course_copy):
    url = postgres("release").replace("postgresql+psycopg://", "postgresql://")  # either spelling
    proc = make("release", f"DB_URL={url}", cwd=course_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (course_copy / "class.csv").write_text("Username,First name,Last name\nada,Ada,Lovelace\nbob,Bob,Babbage\n")
    proc = make("roster", "ROSTER=class.csv", f"DB_URL={url}", cwd=course_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 students into postgresql+psycopg://grader@127.0.0.1" in proc.stdout and "2 added" in proc.stdout
    assert not (course_copy / "gradebook.db").exists(), "the sqlite default was used instead of DB_URL"
    with Gradebook(gradebook_url(url), COURSE_ID) as gradebook:
        assignment = gradebook.find_assignment(PS)
        assert assignment.max_score == 10 and [n.name for n in assignment.notebooks] == [PS]
        assert sorted(s.id for s in gradebook.students) == ["ada", "bob"]
    # Without DB_URL the same targets use the sqlite file of the course.
    env = {k: v for k, v in MAKE_ENV.items() if k != "DB_URL"}
    proc = make("roster", "ROSTER=class.csv", cwd=course_copy, env=env)
    assert proc.returncode == 0 and (course_copy / "gradebook.db").exists(), proc.stdout + proc.stderr


def test_a_psycopg2_url_stops_make_release_with_the_fix(course_copy):
    proc = make("release", "DB_URL=postgresql+psycopg2://grader@127.0.0.1/x", cwd=course_copy)
    assert proc.returncode != 0
    assert "postgresql+psycopg://" in proc.stdout + proc.stderr


def test_a_postgresql_url_without_its_driver_says_to_run_setup_instructor(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a))
    with pytest.raises(ValueError, match=r"psycopg 3\) is not installed.*make setup-instructor"):
        gradebook_url("postgresql://grader@127.0.0.1/autodiff")
