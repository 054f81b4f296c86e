"""The options checks exporters share (dr.kits.validators), through the plans that use them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dr.exporters.dns.options import DnsOptions
from dr.exporters.etcd.options import EtcdOptions
from dr.exporters.git import GitExporter
from dr.kits.validators import listed_once, plain_name


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "-x", "", "a b"])
def test_a_name_that_becomes_a_path_is_plain(bad):
    with pytest.raises(ValueError, match="use letters, digits"):
        plain_name(bad)
    assert plain_name("platform-config_1.2") == "platform-config_1.2"


def test_each_exporter_refuses_a_repeated_name_naming_it():
    with pytest.raises(ValidationError, match="repository names must be unique: a"):
        GitExporter.Options(repositories=[{"name": "a", "url": "/x"}, {"name": "a", "url": "/y"}, {"name": "b", "url": "/z"}])
    with pytest.raises(ValidationError, match="cluster names must be unique: main"):
        EtcdOptions(clusters=[{"name": "main", "endpoints": ["https://e:2379"]}] * 2)
    with pytest.raises(ValidationError, match="zones listed twice: example.com"):
        DnsOptions(zones=[{"zone": "example.com", "axfr": {"server": "127.0.0.1"}}] * 2)
    with pytest.raises(ValidationError, match=r"'\.\.': use letters"):
        EtcdOptions(clusters=[{"name": "..", "endpoints": ["https://e:2379"]}])
    listed_once(["a", "b"], "unused")  # nothing repeated: no error
