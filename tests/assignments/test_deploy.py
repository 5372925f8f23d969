"""The Kubernetes recipe of deploy/, checked offline: the Zero to JupyterHub values against a
schema of the chart's options, the cross-references between the values and the exchange
volume's manifest, and the hub's role hook run on stand-in spawners."""

from __future__ import annotations

import copy
import json
import sys
import types

import jsonschema
import pytest
import yaml
from paths import ROOT

from course_grader.database import course_config

DEPLOY = ROOT / "deploy"


@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load((DEPLOY / "z2jh-values.yaml").read_text())


@pytest.fixture(scope="module")
def exchange_manifests() -> dict[str, dict]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all((DEPLOY / "k8s-exchange.yaml").read_text())}


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((DEPLOY / "z2jh-values.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_values_fit_the_charts_options(values):
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(values)]
    assert errors == []


@pytest.mark.parametrize(
    "mistake",
    [
        lambda v: v["singleuser"]["storage"].update(extraVolumeMount=[]),  # a misspelt key
        lambda v: v["hub"]["db"].update(type="postgresql"),  # not a db type
        lambda v: v["singleuser"]["image"].pop("tag"),  # a required key
        lambda v: v["singleuser"]["storage"]["extraVolumeMounts"][0].pop("mountPath"),
        lambda v: v.update(singeluser={}),
    ],
)
def test_the_schema_catches_typical_mistakes(values, mistake):
    broken = copy.deepcopy(values)
    mistake(broken)
    assert list(validator().iter_errors(broken)), "the schema let a broken values file pass"


def test_the_exchange_volume_is_shared_and_prepared_like_on_one_server(values, exchange_manifests):
    storage, env = values["singleuser"]["storage"], values["singleuser"]["extraEnv"]
    volumes = {v["name"]: v for v in storage["extraVolumes"]}
    mounts = {m["name"]: m for m in storage["extraVolumeMounts"]}
    assert set(mounts) <= set(volumes), "a mount names a volume that is not declared"
    exchange = next(name for name, v in volumes.items() if "persistentVolumeClaim" in v)
    assert mounts[exchange]["mountPath"] == env["AUTODIFF_EXCHANGE"]
    claim = exchange_manifests["PersistentVolumeClaim"]
    assert volumes[exchange]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "every user pod mounts the exchange"
    job = exchange_manifests["Job"]["spec"]["template"]["spec"]
    assert job["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    script = job["containers"][0]["command"][-1]
    course = values["singleuser"]["extraEnv"]["AUTODIFF_COURSE_ID"]
    assert course == course_config(ROOT).CourseDirectory.course_id
    instructor_uid = values["custom"]["course"]["uids"][values["custom"]["course"]["instructors"][0]]
    assert "chmod 1777 /exchange" in script and f"mkdir -p /exchange/{course}" in script
    assert f"chown {instructor_uid}:" in script


def test_every_user_has_a_distinct_uid_and_instructors_are_admins(values):
    course, auth = values["custom"]["course"], values["hub"]["config"]["Authenticator"]
    uids = course["uids"]
    assert len(set(uids.values())) == len(uids) and min(uids.values()) >= 1001
    assert set(auth["allowed_users"]) == set(uids)
    assert set(course["instructors"]) <= set(auth["admin_users"]) <= set(uids)
    assert values["singleuser"]["extraEnv"]["AUTODIFF_UIDS"].startswith(
        values["singleuser"]["storage"]["extraVolumeMounts"][1]["mountPath"] + "/"
    )


class StandInSpawner:
    def __init__(self, name: str):
        self.user = types.SimpleNamespace(name=name)
        self.environment: dict[str, str] = {}
        self.uid = 1000


@pytest.fixture()
def role_hook(values, monkeypatch):
    """The hook of hub.extraConfig, defined as the chart's hub defines it."""
    z2jh = types.ModuleType("z2jh")
    z2jh.get_config = lambda key: {"custom.course": values["custom"]["course"]}[key]
    monkeypatch.setitem(sys.modules, "z2jh", z2jh)
    monkeypatch.setenv("DB_URL", "postgresql+psycopg://grader:secret@db/autodiff")
    c = types.SimpleNamespace(KubeSpawner=types.SimpleNamespace())
    [snippet] = values["hub"]["extraConfig"].values()
    exec(compile(snippet, "hub.extraConfig", "exec"), {"c": c})
    return c.KubeSpawner.pre_spawn_hook


def test_the_role_hook_gives_each_role_its_config_uid_and_only_instructors_the_gradebook(values, role_hook):
    course = values["custom"]["course"]
    instructor, student = course["instructors"][0], next(u for u in course["uids"] if u not in course["instructors"])
    for name, role in [(instructor, "instructor"), (student, "student")]:
        spawner = StandInSpawner(name)
        role_hook(spawner)
        assert spawner.uid == course["uids"][name]
        config_dir = spawner.environment["JUPYTER_CONFIG_PATH"]
        assert config_dir == f"/etc/jupyter/autodiff/{role}" and (DEPLOY / "roles" / role).is_dir()
        assert ("DB_URL" in spawner.environment) == (role == "instructor")
    with pytest.raises(ValueError, match="no uid in custom.course.uids"):
        role_hook(StandInSpawner("stranger"))


def test_collect_reads_the_uid_table_where_pods_have_no_accounts(tmp_path, monkeypatch, values):
    from course_grader.exchange import uid_of

    table = tmp_path / "uids.json"
    table.write_text(json.dumps(values["custom"]["course"]["uids"]))
    monkeypatch.setenv("AUTODIFF_UIDS", str(table))
    assert uid_of("bob") == values["custom"]["course"]["uids"]["bob"]
    assert uid_of("no-such-student") is None
    assert uid_of("root") == 0, "the system's accounts come first"
