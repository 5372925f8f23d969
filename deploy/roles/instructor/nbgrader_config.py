"""nbgrader for an instructor of the course on this hub (installed system-wide by deploy/course_hub.py).

The course is the instructor's clone of the repository, ~/autodiff-course by default (its
nbgrader_config.py, with the gradebook's DB_URL, is loaded from there); the formgrader and
every nbgrader command use it and the hub's exchange.
"""

import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.Exchange.root = os.environ.get("AUTODIFF_EXCHANGE", "/srv/nbgrader/exchange")
course_root = os.path.expanduser(os.environ.get("AUTODIFF_COURSE_ROOT", "~/autodiff-course"))
if os.path.isfile(os.path.join(course_root, "nbgrader_config.py")):
    load_subconfig("nbgrader_config.py", path=course_root)  # noqa: F821  (traitlets)
c.CourseDirectory.course_id = os.environ.get("AUTODIFF_COURSE_ID", "autodiff-from-scratch")
