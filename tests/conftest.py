"""Shared pytest setup. Fixtures live in their own modules, registered here."""

import atexit
import os
import shutil
import tempfile

import pytest

# A backup keeps verified copies of snapshot manifests in a local cache (dr.repository.
# manifest_cache); the suite's, and the dr processes it starts, go to a folder of its own, not
# to the home of whoever runs the tests.
if "DR_CACHE_DIR" not in os.environ:
    os.environ["DR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dr-test-cache-")
    atexit.register(shutil.rmtree, os.environ["DR_CACHE_DIR"], True)

pytest_plugins = ["tests.fixtures_s3", "tests.fixtures_openbao"]


@pytest.fixture(scope="session")
def image_install():
    """A fresh venv holding the image's install of the build context (tests/harness/image_install.py),
    outside pytest's own folder, which only root may enter; made once per session."""
    from pathlib import Path

    from tests.harness.image_install import image_venv

    base = Path(tempfile.mkdtemp(prefix="dr-image-install-"))
    base.chmod(0o755)
    try:
        yield image_venv(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
