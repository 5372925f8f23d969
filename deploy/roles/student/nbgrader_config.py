"""nbgrader for a student of the course on this hub (installed system-wide by deploy/course_hub.py).

The hub puts this folder on JUPYTER_CONFIG_PATH for members of the students' group. Students
fetch, submit and fetch feedback through the exchange; they never see a course folder.
"""

import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.Exchange.root = os.environ.get("AUTODIFF_EXCHANGE", "/srv/nbgrader/exchange")
c.CourseDirectory.course_id = os.environ.get("AUTODIFF_COURSE_ID", "autodiff-from-scratch")
