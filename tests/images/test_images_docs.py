"""Every option of the images exporter is described in docs/exporters/images.md."""

from pathlib import Path

from dr.exporters.images.options import ImagesOptions

DOC = Path(__file__).resolve().parents[2] / "docs" / "exporters" / "images.md"


def test_every_option_is_documented():
    section = DOC.read_text()
    missing = [name for name in ImagesOptions.model_fields if f"| `{name}` |" not in section]
    assert missing == [], "options not in docs/exporters/images.md"
