"""JupyterHub for the course on one server: real Unix users, nbgrader's exchange, two roles.

Run as root (it starts each user's server as that user):

    sudo python3 deploy/course_hub.py apply                       # once, see deploy/README.md
    sudo .venv/bin/jupyterhub -f deploy/jupyterhub_config.py

Users log in with their Unix password (PAM). Members of AUTODIFF_STUDENTS get JupyterLab with
nbgrader's assignment list only; members of AUTODIFF_INSTRUCTORS also get the formgrader and
the course list, on their clone of the course, and the hub's DB_URL (the gradebook).
Settings: deploy/course_hub.py.
"""

import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from course_hub import Settings, members, role_of  # noqa: E402

settings = Settings()
venv_bin = Path(sys.executable).parent  # the course's .venv: the same stack for every user

c.JupyterHub.bind_url = os.environ.get("AUTODIFF_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = os.environ.get("AUTODIFF_HUB_DB", "sqlite:////srv/jupyterhub/jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.environ.get("AUTODIFF_HUB_SECRET", "/srv/jupyterhub/cookie_secret")
c.ConfigurableHTTPProxy.command = [
    os.environ.get("AUTODIFF_PROXY")
    or shutil.which("configurable-http-proxy")
    or str(Path(__file__).resolve().parent / "proxy/node_modules/.bin/configurable-http-proxy")
]

# Who may log in: the course's two groups (PAM checks the password).
c.PAMAuthenticator.allowed_groups = {settings.students, settings.instructors}
c.Authenticator.admin_users = members(settings.instructors)

c.Spawner.cmd = [str(venv_bin / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", **settings.environment()}


def choose_role(spawner):
    """Put the user's role's configuration first on JUPYTER_CONFIG_PATH (its server extensions,
    JupyterLab plug-ins and nbgrader settings win over the environment's defaults)."""
    role = role_of(spawner.user.name, settings)
    if role is None:
        raise PermissionError(f"{spawner.user.name} is in neither {settings.students} nor {settings.instructors}")
    spawner.environment["JUPYTER_CONFIG_PATH"] = str(settings.roles / role)
    if role == "instructor" and os.environ.get("DB_URL"):
        spawner.environment["DB_URL"] = os.environ["DB_URL"]  # the gradebook (instructors only)
    spawner.log.info("%s starts as %s", spawner.user.name, role)


c.Spawner.pre_spawn_hook = choose_role
