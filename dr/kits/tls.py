"""TLS settings the way each ecosystem sets them, for the requests-based clients of exporters.

What a client verifies a server with, first that is set:
1. the source's own option (`ca_cert`, `ca_file`: the plan names a PEM bundle);
2. the ecosystem's variables (MLflow's MLFLOW_TRACKING_SERVER_CERT_PATH, Vault's VAULT_CACERT
   then VAULT_CAPATH, ...), in the order the ecosystem's own client reads them;
3. the generic ones: REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE (what requests reads), SSL_CERT_FILE,
   SSL_CERT_DIR (what OpenSSL reads; requests alone would use certifi's bundle instead);
4. certifi's bundle (requests' default).
Proxies are requests' own: HTTPS_PROXY/HTTP_PROXY/NO_PROXY (the sessions keep trust_env on).
Variables are read when a client is built, not when dr is imported (hvac reads them at import).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

GENERIC_CA = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR")
TRUE = ("1", "true", "yes", "on")


def verify_setting(option: str | None = None, ecosystem: tuple[str, ...] = (), *, insecure: bool = False,
                   env: Mapping[str, str] | None = None) -> bool | str:
    """requests' `verify`: False when `insecure`, else the first CA bundle or folder set (see above), else True."""
    if insecure:
        return False
    env = os.environ if env is None else env
    for value in (option, *(env.get(name) for name in ecosystem + GENERIC_CA)):
        if value:
            return os.path.expanduser(value)
    return True


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """An environment switch set the way the ecosystems write them (true, 1, yes, on)."""
    return (os.environ if env is None else env).get(name, "").strip().lower() in TRUE


class PinnedTLS:
    """A requests HTTPAdapter mixin that sends with the client's own `verify` and `cert`.

    With trust_env on (for proxies), requests lets REQUESTS_CA_BUNDLE override a session's
    `verify`, even `verify=False` (requests issue 3829); the adapter sees the merged value, so
    it is set back here to what verify_setting() chose.
    """

    verify: bool | str = True
    cert: str | tuple[str, str] | None = None

    def send(self, request, **kwargs):
        kwargs["verify"], kwargs["cert"] = self.verify, self.cert
        return super().send(request, **kwargs)
