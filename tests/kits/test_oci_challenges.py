"""The kit's one way of answering an auth challenge (dr.kits.oci.challenges), which the registry
client and the helm chart-repository transport share. The token server here is a small local
HTTP server over a real connection, answering as a distribution token server does (what it
answers is set per test: the failure cases cannot be had from a healthy registry)."""

from __future__ import annotations

import http.server
import json
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from dr.kits.oci.challenges import Challenge, TokenError, ask_token
from dr.kits.oci.credentials import Credential


class _TokenServer:
    def __init__(self) -> None:
        self.asked: list[tuple[dict, str]] = []
        self.answer: tuple[int, dict, bytes] = (200, {}, b'{"token": "t1"}')
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the stdlib's name)
                server.asked.append((parse_qs(urlsplit(self.path).query), self.headers.get("Authorization", "")))
                status, headers, body = server.answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.realm = f"http://127.0.0.1:{self.http.server_address[1]}/token"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def tokens():
    server = _TokenServer()
    yield server
    server.http.shutdown()
    server.http.server_close()


def _challenge(realm: str, scope: str = "") -> Challenge:
    header = f'Bearer realm="{realm}",service="registry.test"' + (f',scope="{scope}"' if scope else "")
    return Challenge.parse(header)


def test_a_challenge_is_parsed_into_its_scheme_and_parameters():
    challenge = Challenge.parse('Bearer realm="https://auth.example/token",service="reg",scope="repository:a:pull"')
    assert challenge.scheme == "bearer" and challenge.realm == "https://auth.example/token"
    assert challenge.params == {"realm": "https://auth.example/token", "service": "reg", "scope": "repository:a:pull"}
    assert Challenge.parse('Basic realm="charts"').scheme == "basic"


def test_the_requests_scopes_are_asked_else_the_challenges_own(tokens):
    session = requests.Session()
    session.trust_env = False
    login = Credential("robot", "s3cret")
    assert ask_token(session, _challenge(tokens.realm, "repository:x:pull"), ["repository:a:pull", "repository:b:push"],
                     login, 5) == "t1"
    assert ask_token(session, _challenge(tokens.realm, "repository:x:pull"), [""], None, 5) == "t1"
    (first, auth), (second, anonymous) = tokens.asked
    assert first["scope"] == ["repository:a:pull", "repository:b:push"] and first["service"] == ["registry.test"]
    assert auth.startswith("Basic ") and anonymous == ""
    assert second["scope"] == ["repository:x:pull"]


def test_an_identity_token_is_sent_as_a_refresh_token_grant_not_as_basic_auth(tokens):
    session = requests.Session()
    session.trust_env = False
    ask_token(session, _challenge(tokens.realm), [], Credential("<token>", "refresh-me", identity_token=True), 5)
    query, auth = tokens.asked[0]
    assert query["grant_type"] == ["refresh_token"] and query["refresh_token"] == ["refresh-me"] and auth == ""


@pytest.mark.parametrize("status, headers, body, temporary, refused, reason", [
    (503, {"Retry-After": "7"}, b"busy", True, False, "HTTP 503"),
    (401, {}, b"no", False, True, "HTTP 401"),
    (200, {}, b"<html>login</html>", False, False, "the answer is not JSON"),
    (200, {}, b'["a"]', False, False, "the answer is not a JSON object"),
])
def test_a_token_server_that_gives_no_token_says_why_and_whether_asking_again_may_help(
        tokens, status, headers, body, temporary, refused, reason):
    tokens.answer = (status, headers, body)
    session = requests.Session()
    session.trust_env = False
    with pytest.raises(TokenError) as caught:
        ask_token(session, _challenge(tokens.realm), ["repository:a:pull"], Credential("robot", "s3cret"), 5)
    error = caught.value
    assert (error.temporary, error.refused, error.reason) == (temporary, refused, reason)
    assert error.retry_after == (7.0 if temporary else None)
    assert str(error) == f"token server {tokens.realm}: {reason}" and "s3cret" not in str(error)


def test_an_unreachable_token_server_is_temporary():
    session = requests.Session()
    session.trust_env = False
    with pytest.raises(TokenError) as caught:
        ask_token(session, _challenge("http://127.0.0.1:9/token"), [], None, 2)
    assert caught.value.temporary and caught.value.status is None
    assert json.dumps(caught.value.reason).startswith('"connection failed')
