"""The kit's registry credential resolver (dr.kits.oci.credentials), which images and helm share:
every docker config form, the plan's file first, ECR tokens; never printed. (Pull secrets are
tested with the images exporter, which names them: tests/images/test_images_references_and_auth.py.)"""

from __future__ import annotations

import base64
import json

from dr.kits.oci.credentials import Credential, Credentials, ecr_credential, from_config


def test_credentials_from_a_docker_config_in_every_form_and_never_printed():
    token = base64.b64encode(b"robot:p4ss").decode()
    config = {"auths": {"reg.local": {"auth": token}, "https://index.docker.io/v1/": {"username": "hub",
                                                                                        "password": "h"},
                        "id.local": {"identitytoken": "refresh-me"}}}
    assert from_config(config, "reg.local") == Credential("robot", "p4ss")
    assert from_config(config, "docker.io").username == "hub"
    assert from_config(config, "id.local").identity_token
    assert from_config(config, "other.local") is None
    assert "p4ss" not in repr(from_config(config, "reg.local")) + str(from_config(config, "reg.local"))


def test_an_auth_file_named_by_the_plan_wins(tmp_path, monkeypatch):
    token = base64.b64encode(b"from-plan:x").decode()
    (tmp_path / "auth.json").write_text(json.dumps({"auths": {"reg.local": {"auth": token}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "nowhere"))
    assert Credentials(str(tmp_path / "auth.json")).for_host("reg.local").username == "from-plan"
    assert Credentials(None, ecr=False).for_host("reg.local") is None


def test_ecr_hosts_get_a_token_through_boto3(monkeypatch):
    from moto import mock_aws
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    with mock_aws():
        credential = ecr_credential("123456789012.dkr.ecr.us-east-1.amazonaws.com")
    assert credential is not None and credential.username == "AWS" and credential.password


def test_a_credential_says_where_it_was_found_and_default_files_replace_dockers(tmp_path, monkeypatch):
    """`source` names the file (the plan's as `auth_file PATH`), never the secret; `default_files`
    stands in for docker's files (helm puts its own registry config first)."""
    def config(name: str, user: str) -> str:
        (tmp_path / name).write_text(json.dumps({"auths": {"reg.local": {"username": user, "password": "p"}}}))
        return str(tmp_path / name)

    monkeypatch.setenv("REGISTRY_AUTH_FILE", config("docker.json", "from-docker"))
    plan = config("plan.json", "from-plan")
    assert Credentials(plan).for_host("reg.local").source == f"auth_file {plan}"
    found = Credentials(None, ecr=False).for_host("reg.local")
    assert found.username == "from-docker" and found.source == str(tmp_path / "docker.json")
    own = config("own.json", "from-own")
    assert Credentials(None, default_files=[own]).for_host("reg.local").source == own
    assert Credentials(None, default_files=[]).for_host("reg.local") is None
