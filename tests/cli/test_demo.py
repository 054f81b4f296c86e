"""The README's first command: `dr demo` runs the whole job on local stand-ins and succeeds."""

from dr.cli.main import main


def test_demo_backs_up_verifies_and_restores(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "0 B uploaded in 0 new blobs, 9 unchanged artifacts reused" in out
    assert "no problems found" in out
    assert "identical to the originals" in out
    assert "AGE-SECRET-KEY" not in out
    assert "dr-image-in-failed-domain" in out and "it found the planted blocker" in out
    assert (tmp_path / "demo" / "audit.html").read_text().count("<svg") >= 1
