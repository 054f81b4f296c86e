"""Faults: each one is a finding or a failed source with a reason naming the image, and the
other images still copy."""

from __future__ import annotations

from dr.exporters.images.references import cosign_tags
from tests.servers import free_port as closed_port  # nothing listens there once it returns
from tests.images.conftest import auth_file, backup, plan_with, source_result


def _codes(result) -> dict[str, str]:
    return {f["code"]: f["message"] for f in source_result(result).findings}


def test_a_registry_failing_for_a_while_is_retried_honouring_retry_after(tmp_path, registries, images, proxy):
    api = images.api.replace(registries.source.host, proxy.host)
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/flaky"], "images": [api], "retries": 4})
    proxy.fail_next, proxy.fail_status, proxy.retry_after = 3, 429, "0.2"
    import time
    started = time.monotonic()
    result, records, _ = backup(plan)
    assert source_result(result).ok and not source_result(result).findings and list(records) == [api]
    assert time.monotonic() - started >= 0.6  # three Retry-After waits of 0.2 s
    proxy.reset()
    proxy.fail_next, proxy.fail_status = 2, 500
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/flaky-500"], "images": [api], "retries": 4})
    result, records, _ = backup(plan)
    assert source_result(result).ok and list(records) == [api]


def test_a_download_that_breaks_half_way_is_copied_again_from_its_start(tmp_path, registries, images, proxy):
    worker = images.worker.replace(registries.source.host, proxy.host)
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/broken-stream"], "images": [worker], "retries": 3})
    proxy.truncate = 2
    result, records, _ = backup(plan)
    assert source_result(result).ok and not source_result(result).findings and list(records) == [worker]
    assert proxy.truncate == 0  # both breaks happened, and the copies that followed succeeded


def test_missing_tag_corrupt_blob_and_down_registry_each_name_the_image_and_the_rest_copy(
        tmp_path, registries, images, proxy):
    corrupt = images.worker.replace(registries.source.host, proxy.host)
    missing = images.api.replace(":1.0", ":no-such-tag")
    down = f"127.0.0.1:{closed_port()}/team/app:1"
    # the worker's own layer is served corrupt (the shared base layers are not)
    worker_layer = _own_layer(registries, "team/worker")
    proxy.corrupt.add(worker_layer)
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/faults"], "retries": 1,
                                "images": [corrupt, missing, down, images.multi]},
                     pods={"api": [images.api]})
    result, records, _ = backup(plan)
    assert sorted(records) == sorted([images.api, images.multi])  # the good ones were copied
    messages = [f["message"] for f in source_result(result).findings]
    assert any(m.startswith(missing) and "no such tag" in m for m in messages)
    assert any(m.startswith(down) and "connection failed" in m for m in messages)
    assert any(m.startswith(corrupt) and worker_layer in m and "refused" in m for m in messages)
    assert result.failed_sources  # an error finding: the source captured less than it should
    # the corrupt layer never reached the DR registry
    host = proxy.host.replace(":", "-")
    assert registries.dr.client().has_blob(f"faults/{host}/team/worker", worker_layer) is None


def test_bad_credentials_for_a_dr_registry_are_a_finding_and_the_other_registry_still_gets_copies(
        tmp_path, registries, images):
    plan = plan_with(tmp_path, {"to": [registries.dr_auth.url, f"{registries.dr.url}/creds"],
                                "images": [images.api], "auth_file": auth_file(tmp_path, registries, "wrong")})
    result, records, _ = backup(plan)
    codes = _codes(result)
    assert "dr-registry-unreachable" in codes and "refused the credentials" in codes["dr-registry-unreachable"]
    assert "wrong" not in str(source_result(result).findings)  # never printed
    assert [c["registry"] for c in records[images.api][1]["copies"]] == [f"{registries.dr.url}/creds"]


def test_no_credentials_and_no_dr_registry_answering_fail_the_source(tmp_path, registries, images):
    plan = plan_with(tmp_path, {"to": [registries.dr_auth.url], "images": [images.api], "auth_file": "none.json"})
    result, records, _ = backup(plan)
    assert not source_result(result).ok and "no DR registry answers" in source_result(result).error
    assert "needs credentials" in source_result(result).error


def test_signatures_can_be_left_out(tmp_path, registries, images):
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/nosig"], "images": [images.api], "signatures": False})
    result, records, _ = backup(plan)
    host = registries.source.host.replace(":", "-")
    assert cosign_tags(images.api_digest)[0] not in registries.dr.client().tags(f"nosig/{host}/team/api")
    assert records[images.api][1]["attached"] == []


def _own_layer(registries, path: str) -> str:
    import json
    client = registries.source.client()
    manifest = json.loads(client.get_manifest(path, "1.0").body)
    return manifest["layers"][-1]["digest"]



class _HostileRegistry:
    """A registry that serves a 64 MiB manifest, with or without a Content-Length. Not a real
    registry: real ones refuse such a manifest on push (distribution 2.8 answers
    MANIFEST_INVALID), so only a hostile or broken server serves one, and this stands for it.
    It counts the bytes it managed to send before dr hung up."""

    SIZE = 64 << 20

    def __init__(self, declare_length: bool, status: int = 200):
        import http.server
        import threading

        outer = self
        self.sent = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, with_body: bool):
                huge = self.path.startswith("/v2/team/huge/manifests/")
                self.send_response(status if huge and with_body else 200)  # the tag's HEAD succeeds
                if huge:
                    self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                    self.send_header("Docker-Content-Digest", "sha256:" + "0" * 64)
                    if declare_length:
                        self.send_header("Content-Length", str(outer.SIZE))
                    self.end_headers()
                    if with_body:
                        self._pad()
                else:
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def _pad(self):
                piece = b" " * (1 << 20)
                try:
                    for _ in range(outer.SIZE >> 20):
                        self.wfile.write(piece)
                        outer.sent += len(piece)
                except OSError:
                    pass  # dr hung up

            def do_HEAD(self):
                self._answer(False)

            def do_GET(self):
                self._answer(True)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _huge_image_message(tmp_path, registries, images, hostile: _HostileRegistry) -> str:
    """Back up the hostile registry's image beside a real one; the real one must copy, and the
    hostile one's finding (its message) is returned."""
    try:
        huge = f"{hostile.host}/team/huge:1"
        plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/limits"], "retries": 1,
                                    "images": [huge, images.api]})
        result, records, _ = backup(plan)
    finally:
        hostile.close()
    assert list(records) == [images.api]
    [message] = [f["message"] for f in source_result(result).findings if f["message"].startswith(huge)]
    assert hostile.sent < 32 << 20  # dr stopped reading long before the end
    return message


def test_a_manifest_over_the_metadata_limit_is_refused_and_the_rest_copy(tmp_path, registries, images):
    """A registry serving a manifest of 64 MiB: dr refuses it once past 4 MiB (ORAS's and Pulp's
    limit for manifests) without holding the rest, whether the size is declared up front or
    not; the finding names the image, and the other images still copy."""
    for declared in (True, False):
        message = _huge_image_message(tmp_path, registries, images, _HostileRegistry(declare_length=declared))
        assert "over the 4 MiB" in message, message


def test_a_huge_error_answer_is_not_held_either(tmp_path, registries, images):
    """The same 64 MiB, as the body of an HTTP 400 answer: dr reads it within the same bound
    (for the OCI error codes), and the image still fails with the status named."""
    message = _huge_image_message(tmp_path, registries, images, _HostileRegistry(declare_length=False, status=400))
    assert "HTTP 400" in message, message
