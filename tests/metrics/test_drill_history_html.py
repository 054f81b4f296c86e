"""`dr drill --history --format html`: measured RTO per phase and RPO over real drills, drawn as
inline SVG beside the plan's objectives, rendered by a real headless Chromium (Debian's), as
tests/audit/test_html_in_browser.py renders the audit's report."""

from __future__ import annotations

import subprocess

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.drills.history_html import COLOURS, OBJECTIVE_COLOUR, Objective, render_history_html
from tests.audit.test_html_in_browser import FLAGS, _chromium, _png_pixels
from tests.metrics.plans import data_folder, files_plan


def _pixels(path, colour: str) -> int:
    """Pixels within a small distance of `colour` (#rrggbb) in a PNG screenshot."""
    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    width, channels, rows = _png_pixels(path.read_bytes())
    return sum(1 for row in rows for x in range(0, width * channels, channels)
               if all(abs(row[x + c] - want[c]) < 24 for c in range(3)))


def test_the_history_page_charts_real_drills_beside_the_objectives(tmp_path, capsys):
    plan = files_plan(tmp_path, "charted", {"config": data_folder(tmp_path, "config")}, rpo="1s", rto="1s")
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    for i in range(3):
        assert main(["drill", "--plan", plan, "--failed", "cluster-a", "--to", str(tmp_path / f"scratch{i}"),
                     "-q"]) == Exit.OK
    page = tmp_path / "history.html"
    assert main(["drill", "--plan", plan, "--history", "--format", "html", "--out", str(page), "-q"]) == Exit.OK
    html = page.read_text()
    assert html.count("<svg") == 2 and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert html.count(f'fill="{COLOURS["restore"]}"') == 3  # one restore segment per drill
    assert "rto objective 1.0s (config)" in html and "rpo objective 1.0s (config)" in html
    assert html.count("<tr><td>") == 3
    text = tmp_path / "history.txt"
    assert main(["drill", "--plan", plan, "--history", "--out", str(text), "-q"]) == Exit.OK
    assert text.read_text().startswith("3 drill(s) in target dr-site, oldest first\n")

    chromium = _chromium()
    common = FLAGS + [f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,1100"]
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *common, f"--screenshot={shot}", page.as_uri()], capture_output=True,
                   timeout=120, check=True)
    # The restore phase's bars and both dashed objective lines are drawn: measured ~1,000+ and
    # ~1,500 pixels here; a chart without them has none of those colours.
    assert _pixels(shot, COLOURS["restore"]) > 200
    assert _pixels(shot, OBJECTIVE_COLOUR) > 400


def test_an_objective_far_above_every_drill_is_named_not_drawn_to_scale():
    record = {"started": "2026-11-30T10:00:00Z", "scenario": "cluster-a (cluster) fails", "result": "recovered",
              "rpo_seconds": 4.0, "rto": {"total_seconds": 2.0, "phases": {"audit": 0.5, "restore": 1.5}}}
    html = render_history_html("p", "dr-site", [record], Objective(1800.0, "config"), None)
    assert "rto objective 30m (config): far above every drill, off this scale" in html
    assert "no rpo objective in the plan" in html
    assert f'stroke="{OBJECTIVE_COLOUR}"' not in html


def test_format_html_without_history_or_with_json_on_stdout_is_a_usage_error(tmp_path, capsys):
    plan = files_plan(tmp_path, "usage", {"config": data_folder(tmp_path, "config")})
    assert main(["drill", "--plan", plan, "--failed", "cluster-a", "--to", str(tmp_path / "s"),
                 "--format", "html"]) == Exit.USAGE
    assert main(["drill", "--plan", plan, "--history", "--format", "html", "--json"]) == Exit.USAGE
    assert "name the page's file with --out" in capsys.readouterr().err


def test_the_matrix_history_page_charts_each_scenario_over_the_matrix_runs(tmp_path, capsys):
    plan = files_plan(tmp_path, "matrix-charted", {"config": data_folder(tmp_path, "config")}, rpo="1s", rto="1s")
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    page = tmp_path / "matrix.html"
    assert main(["drill", "--plan", plan, "--history", "--matrix", "--format", "html", "--out", str(page),
                 "-q"]) == Exit.OK
    assert "No drill matrix recorded yet" in page.read_text()
    for i in range(2):
        assert main(["drill", "--plan", plan, "--matrix", "--to", str(tmp_path / f"scratch{i}"), "-q"]) == Exit.OK
    # a single drill between them is not a matrix run: it is not charted here
    assert main(["drill", "--plan", plan, "--failed", "cluster-a", "--to", str(tmp_path / "single"),
                 "-q"]) == Exit.OK
    assert main(["drill", "--plan", plan, "--history", "--matrix", "--format", "html", "--out", str(page),
                 "-q"]) == Exit.OK
    html = page.read_text()
    assert "2 matrix run(s)" in html and "Scenario cluster-a: measured RTO per phase" in html
    assert html.count("<svg") == 1  # the plan protects one domain and has no registry or secret store
    assert html.count(f'fill="{COLOURS["restore"]}"') == 2  # one bar per matrix run
    assert html.count("<h3>Matrix ") == 2 and "rto objective 1.0s (config)" in html
    chromium = _chromium()
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,900",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    assert _pixels(shot, COLOURS["restore"]) > 100 and _pixels(shot, OBJECTIVE_COLOUR) > 200
