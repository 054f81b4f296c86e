"""`dr audit --identity`: the report names sealed secrets by their names (docs/format.md 8.1).

Without an identity the report names a secret artifact by its keyed identity and a sealed name
in a dependency (a Secrets Manager secret, a chosen KMS alias) by its keyed digest. The verdicts
never depend on the names: the audit judges the stored lines either way, so a report with and
without the identity gives the same verdicts, and only the words shown differ. Given identities,
the catalog lines pass through a Revealer on their way to the dependency index; it opens every
sealed line it can and learns digest -> name: the line's stored identity -> its real identity,
and keyed("name\\x00" + n) -> n for each n the exporter listed in the body's meta
`sealed_names`. The rendered report then has every digest it learnt replaced, escaped for the
report's format. Reports are often published (CI artifacts), so the audit opens names only when
asked (--identity FILE), never from the plan's identity_env.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable, Iterator

from dr.repository import encryption, names

DIGEST = re.compile(re.escape(names.PREFIX) + "[0-9a-f]{64}")
#: how a name is written into each report format in place of its digest
ESCAPES = {"json": lambda n: json.dumps(n)[1:-1], "html": html.escape,
           "md": lambda n: n.replace("|", "\\|")}


class Revealer:
    def __init__(self, identities: list, name_key: bytes):
        self.identities, self.name_key = identities, name_key
        self.names: dict[str, str] = {}
        self.unopened = 0  # sealed lines no identity given opens (other recipients, or damaged)

    def record(self, records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Pass catalog lines through unchanged, learning the names of the sealed ones."""
        for record in records:
            meta = record.get("meta")
            if type(meta) is dict and names.SEALED in meta:
                self._learn(record, meta[names.SEALED])
            yield record

    def _learn(self, record: dict[str, Any], sealed: Any) -> None:
        try:
            body = names.open_body(sealed, self.identities, f"{record.get('source')}/{record.get('identity')}")
        except encryption.EncryptionError:
            self.unopened += 1
            return
        if type(record.get("identity")) is str:
            self.names[record["identity"]] = body["identity"]
        listed = body["meta"].get(names.SEALED_NAMES)
        for name in listed if type(listed) is list else ():
            if type(name) is str:
                self.names[names.keyed(self.name_key, f"name\x00{name}")] = name

    def reveal(self, text: str, fmt: str) -> str:
        """`text` (a rendered report) with each digest learnt replaced by its name."""
        escape = ESCAPES.get(fmt, ESCAPES["md"])
        return DIGEST.sub(lambda m: escape(self.names[m.group()]) if m.group() in self.names else m.group(), text)
