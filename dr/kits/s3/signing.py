"""Static S3 credentials, and signing a request with them (AWS Signature Version 4).

For the lean S3 client (lean.py). `static_setup` decides whether this process's S3 setup is
one the lean client reproduces exactly what botocore would do with it: keys in the environment
(botocore's first credential provider when no profile is named), a known region, and nothing
that changes where or how requests go (a profile, an endpoint or FIPS/dual-stack setting, a
proxy, a config file with more than a region in it). Anything else returns None, and the store
uses botocore as before: IAM roles, SSO, web identity, credential_process and the rest are
botocore's to resolve.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
# Any of these set: botocore may send the request elsewhere, or through something else.
ROUTING_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
               "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
               "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# Config-file keys of the default profile that change nothing for these requests.
HARMLESS_CONFIG = frozenset({"region", "output", "cli_pager", "cli_timestamp_format", "cli_history",
                             "cli_follow_urlparam", "cli_binary_format", "cli_auto_prompt", "retry_mode",
                             "max_attempts"})
# AWS's own endpoint (no endpoint_url): the commercial partition only (not China, GovCloud, ISO).
AWS_REGION = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]+-\d+$")
# The switch to botocore for every request: DR_S3_CLIENT=botocore.
CLIENT_ENV = "DR_S3_CLIENT"


@dataclass(frozen=True)
class StaticSetup:
    access_key: str
    secret_key: str
    token: str
    region: str
    endpoint: str  # scheme://host[:port][/path], no trailing slash
    ca_bundle: str | None


def static_setup(region: str | None, endpoint_url: str | None, profile: str | None,
                 env=os.environ) -> StaticSetup | None:
    """The setup the lean client can serve, or None (botocore serves it)."""
    if env.get(CLIENT_ENV, "").lower() == "botocore" or profile or any(env.get(n) for n in ROUTING_ENV):
        return None
    access, secret = env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")
    if not access or not secret:
        return None
    config = _default_profile(env)
    if config is None or set(config) - HARMLESS_CONFIG:
        return None
    region = region or env.get("AWS_DEFAULT_REGION") or config.get("region")
    if not region:
        return None
    if endpoint_url:
        parts = urlsplit(endpoint_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc \
                or parts.query or parts.fragment:
            return None
        endpoint = endpoint_url.rstrip("/")
    elif AWS_REGION.match(region) and not region.startswith("us-gov-"):
        endpoint = f"https://s3.{region}.amazonaws.com"
    else:
        return None
    token = env.get("AWS_SESSION_TOKEN") or env.get("AWS_SECURITY_TOKEN") or ""
    return StaticSetup(access, secret, token, region, endpoint, env.get("AWS_CA_BUNDLE") or None)


def _default_profile(env) -> dict | None:
    """The default profile's settings in the shared config file ({} without one); None when
    the file cannot be read as botocore reads it."""
    path = os.path.expanduser(env.get("AWS_CONFIG_FILE") or "~/.aws/config")
    if not os.path.isfile(path):
        return {}
    import configparser  # only when there is a file: most runs in a pod have none

    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeError):
        return None
    return dict(parser["default"]) if parser.has_section("default") else {}


def sign(setup: StaticSetup, method: str, host: str, path: str, query: dict[str, str],
         headers: dict[str, str], payload_sha256: str, now: float | None = None) -> dict[str, str]:
    """`headers` plus the SigV4 headers (x-amz-date, x-amz-content-sha256, authorization,
    x-amz-security-token with a session token). `path` is the request path already quoted
    (quote_path); every header given is signed."""
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    signed = {k.lower(): str(v) for k, v in headers.items()}
    signed.update({"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload_sha256})
    if setup.token:
        signed["x-amz-security-token"] = setup.token
    names = sorted(signed)
    canonical = "\n".join([
        method, path, canonical_query(query),
        "".join(f"{name}:{' '.join(signed[name].split())}\n" for name in names),
        ";".join(names), payload_sha256])
    scope = f"{amz_date[:8]}/{setup.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + setup.secret_key).encode()
    for part in (amz_date[:8], setup.region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed["authorization"] = (f"AWS4-HMAC-SHA256 Credential={setup.access_key}/{scope}, "
                               f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return signed


def quote_path(path: str) -> str:
    """S3's canonical URI: every byte but the unreserved ones and '/' percent-encoded, once."""
    return quote(path, safe="/~")


def canonical_query(query: dict[str, str]) -> str:
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query.items()))
