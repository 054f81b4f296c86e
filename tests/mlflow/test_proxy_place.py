"""The MLflow artifact proxy as a place of the kit's contract (dr/exporters/mlflow/proxy.py): read
only, so every write is refused as permanent (retrying cannot help)."""
from __future__ import annotations

import pytest

from dr.exporters.mlflow.proxy import ProxyPlace
from dr.kits.places.contract import PermanentPlaceError


def test_the_mlflow_artifact_proxy_refuses_writes_as_permanent():
    proxy = ProxyPlace("http://mlflow:5000/api/2.0/mlflow-artifacts/artifacts/1/abc", client=None)
    for write in (lambda: proxy.put("x", b""), lambda: proxy.writer("x", 1, 1), lambda: proxy.delete("x")):
        with pytest.raises(PermanentPlaceError, match="read as whole files"):
            write()
