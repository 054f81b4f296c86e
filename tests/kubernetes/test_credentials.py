"""The credentials every request carries (requesting.Api._http sends on the client's pool, not
through the generated client): the kubeconfig's token, an exec plugin's token, and the plugin's
next token once the first one expires, as the emulated API server saw them on each request."""

from __future__ import annotations

import sys
import time

import yaml

from tests.kubernetes.conftest import failures

PLUGIN = """\
import datetime, json, os, sys
counter = sys.argv[1]
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(sys.argv[2]))
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": f"plugin-{n}", "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}))
"""


def _use_exec_plugin(tmp_path, kubeconfig: str, context: str, lifetime_s: float) -> str:
    """Rewrite `context`'s user to get its token from an exec credential plugin (a Python
    script standing in for aws-iam-authenticator or gke-gcloud-auth-plugin); the counter file."""
    plugin, counter = tmp_path / "plugin.py", str(tmp_path / "issued")
    plugin.write_text(PLUGIN)
    with open(kubeconfig) as handle:
        config = yaml.safe_load(handle)
    user = next(c["context"]["user"] for c in config["contexts"] if c["name"] == context)
    for entry in config["users"]:
        if entry["name"] == user:
            entry["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                      "command": sys.executable,
                                      "args": [str(plugin), counter, str(lifetime_s)],
                                      "interactiveMode": "Never"}}
    with open(kubeconfig, "w") as handle:
        yaml.safe_dump(config, handle)
    return counter


def _sent(cluster) -> set[str | None]:
    return {r.authorization for r in cluster.requests}


def test_a_backup_and_a_restore_send_the_kubeconfigs_token_on_every_request(pipeline, source, dest):
    backup = pipeline.backup()
    assert _sent(source) == {"Bearer emulated-token"}
    assert failures(pipeline.restore(backup.artifacts)) == []
    assert dest.count(verb="create") > 10
    assert _sent(dest) == {"Bearer emulated-token"}


def test_a_restore_sends_the_exec_plugins_token(tmp_path, pipeline, dest):
    backup = pipeline.backup()
    _use_exec_plugin(tmp_path, pipeline.kubeconfig, "dest", lifetime_s=3600)
    assert failures(pipeline.restore(backup.artifacts)) == []
    assert dest.count(verb="create") > 10
    assert _sent(dest) == {"Bearer plugin-1"}


def test_an_expired_token_is_renewed_before_the_next_request(tmp_path, pipeline, dest):
    backup = pipeline.backup()
    # the client renews a token 5 minutes before it expires: this one is good for 4 s more
    counter = _use_exec_plugin(tmp_path, pipeline.kubeconfig, "dest", lifetime_s=300 + 4)
    assert failures(pipeline.restore(backup.artifacts)) == []
    first = _sent(dest)
    dest.reset_requests()
    time.sleep(4.5)
    pipeline.restore(backup.artifacts)
    issued = int(open(counter).read())
    assert issued >= 2, "the plugin ran once: the expired token was never renewed"
    later = _sent(dest)
    assert later and later <= {f"Bearer plugin-{n}" for n in range(2, issued + 1)}, (first, later)


def test_the_credential_hook_is_asked_about_once_a_second_not_per_request(pipeline, dest, monkeypatch):
    import kubernetes.client

    backup = pipeline.backup()
    asked: list[float] = []
    hook = kubernetes.client.ApiClient.update_params_for_auth

    def counting(self, *args, **kwargs):
        asked.append(time.monotonic())
        return hook(self, *args, **kwargs)
    monkeypatch.setattr(kubernetes.client.ApiClient, "update_params_for_auth", counting)
    assert failures(pipeline.restore(backup.artifacts)) == []
    # the discovery's requests go through the generated client and ask each time; dr's own
    # reuse one answer for a second (requesting.CREDENTIALS_REUSE_SECONDS)
    assert len(dest.requests) > 100
    assert len(asked) < len(dest.requests) / 4, (len(asked), len(dest.requests))
