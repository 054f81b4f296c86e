"""The HTML audit report in a real headless Chromium (Debian's): it renders, the picture shows.

Chromium is installed by scripts/install-test-deps; its absence fails the test.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

from dr.cli.main import main

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    path = shutil.which("chromium")
    assert path, "Debian's chromium is missing: run scripts/install-test-deps"
    return path


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB(A) PNG (as Chromium writes) into rows, with the standard library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, up_left = prev[i], (prev[i - channels] if i >= channels else 0)
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        rows.append(bytes(line))
        prev = line
    return width, channels, rows


def test_the_report_renders_with_its_picture(tmp_path):
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    report = tmp_path / "demo" / "audit.html"
    chromium = _chromium()
    common = FLAGS + [f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,900"]
    dom = subprocess.run([chromium, *common, "--dump-dom", report.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert "<svg" in dom and "dr-image-in-failed-domain" in dom and "cluster-a (cluster): FAILED" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *common, f"--screenshot={shot}", report.as_uri()], capture_output=True,
                   timeout=120, check=True)
    assert _red_pixels(shot) > 0
    # The picture alone, as the page embeds it: the failed domain's border and the blocker node
    # are drawn red. Measured ~20,000 red pixels; a picture without them has none.
    text = report.read_text()
    picture = tmp_path / "picture.svg"
    picture.write_text(text[text.index("<svg"):text.index("</svg>") + len("</svg>")])
    subprocess.run([chromium, *common, f"--screenshot={tmp_path / 'picture.png'}", picture.as_uri()],
                   capture_output=True, timeout=120, check=True)
    red = _red_pixels(tmp_path / "picture.png")
    assert red > 3000, f"no red blocker drawn in the picture ({red} red pixels)"


def _red_pixels(path) -> int:
    width, channels, rows = _png_pixels(path.read_bytes())
    return sum(1 for row in rows for x in range(0, width * channels, channels)
               if row[x] > 170 and row[x + 1] < 80 and row[x + 2] < 80)
