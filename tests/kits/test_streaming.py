"""write_stream (dr/kits/places/streaming.py): a file is published only when its stream held
exactly the listed size, on a real directory and through the retrying wrapper."""
from __future__ import annotations

import io

import pytest

from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.kits.places.streaming import ReaderStream, write_stream


@pytest.mark.parametrize("size", [0, 5, 3 << 20])
def test_a_stream_of_the_listed_size_is_published_whole(tmp_path, size):
    place = RetryingPlace(LocalPlace(tmp_path))
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert write_stream(place, "a/w.bin", io.BytesIO(data), size, budget=2 << 20) == size
    assert place.get("a/w.bin") == data
    assert ReaderStream(place.open_read("a/w.bin")).read() == data


@pytest.mark.parametrize("actual", [3, 7])
def test_a_stream_shorter_or_longer_than_listed_publishes_nothing(tmp_path, actual):
    place = LocalPlace(tmp_path)
    assert write_stream(place, "w.bin", io.BytesIO(b"y" * actual), 5) == min(actual, 6)
    assert place.get("w.bin") is None and list(place.list_files()) == []

