"""A finished DR copy in a directory keeps no empty `dr-journal/` folder (issue 16, item 7).

On S3 deleting the journal's entries leaves nothing; in a directory it left the emptied folder
in every finished copy, where a trainer or an operator listing the copy would find it.
"""

from __future__ import annotations

from dr.exporters.checkpoints.copies.layout import JOURNAL, MARKER
from tests.checkpoints.test_exporter_helpers import Repo, make_exporter, save_steps


def test_finished_directory_copies_have_no_journal_folder(tmp_path):
    save_steps(tmp_path / "runs", "r1", [1, 2], single_file_per_rank=False)
    options = {"roots": [str(tmp_path / "runs")], "dr_copy": str(tmp_path / "dr"), "settle_seconds": 0}
    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    assert len(backup.artifacts) == 2 and backup.findings == []
    assert len(list((tmp_path / "dr").rglob(MARKER))) == 2
    assert list((tmp_path / "dr").rglob(JOURNAL)) == []
