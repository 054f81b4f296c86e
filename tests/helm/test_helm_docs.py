"""Every option of the helm exporter is described in docs/exporters/helm.md, and the
page's options table lists nothing the exporter does not have."""

import re
from pathlib import Path

from dr.exporters.helm.options import HelmOptions

DOC = Path(__file__).resolve().parents[2] / "docs" / "exporters" / "helm.md"


def test_every_option_is_documented_and_no_other():
    section = DOC.read_text()
    table = section.split("**Options.**", 1)[1].split("\n\n", 2)[1]
    documented = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert sorted(documented) == sorted(HelmOptions.model_fields)
