"""Every built-in exporter has its own page, docs/exporters/<name>.md (issue 32, item 5).

The page is linked from docs/exporters.md's table of built-ins and links back to the contract
page; relative links between the pages resolve. (That each page has a row for every option of
its exporter, nested ones too, is tests/test_contract_docs.py's.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dr.contract.registry import BUILTIN

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = DOCS / "exporters"


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_built_in_has_a_linked_page(name):
    page = PAGES / f"{name}.md"
    assert page.is_file(), f"{name} has no page {page.relative_to(DOCS.parent)}"
    text = page.read_text()
    assert f"[`{name}`](exporters/{name}.md)" in (DOCS / "exporters.md").read_text()
    assert "](../exporters.md" in text, f"{page.name} does not link the contract page"


@pytest.mark.parametrize("page", sorted([*PAGES.glob("*.md"), DOCS / "exporters.md"]), ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\((?!https?:|#|mailto:)([^)#\s]+)", page.read_text()):
        assert (page.parent / target).exists(), f"{page.relative_to(DOCS.parent)} links {target}, which is missing"
