"""Keeping credentials out of everything dr prints or records."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
_SECRET_PARAMS = re.compile(r"(?i)([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|"
                            r"signature|token|access_token|password|secret)=)[^&\s]+")
_KEYS = re.compile(r"AGE-SECRET-KEY-1[0-9A-Z]+|(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")


def redact(text: str) -> str:
    """Remove user:password@ from URLs, signed-URL parameters, age private keys, AWS key ids."""
    text = str(text)
    if not _may_hold_secret(text):
        return text
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", text)
    text = _SECRET_PARAMS.sub(lambda m: f"{m.group(1)}***", text)
    return _KEYS.sub("***", text)


def _may_hold_secret(text: str) -> bool:
    """False when no pattern above can match: each needs one of these literals. Most text has
    none, and these tests cost far less than three regex scans (an audit redacts every
    message of tens of thousands of findings)."""
    return "@" in text or "=" in text or "AGE-SECRET-KEY-1" in text or "AKIA" in text or "ASIA" in text
