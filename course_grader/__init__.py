"""Instructor tooling: sandboxed autograding of nbgrader hand-ins (not installed for students)."""
