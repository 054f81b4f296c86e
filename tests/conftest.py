"""Shared pytest setup. Fixtures live in their own modules, registered here."""

import atexit
import os
import shutil
import tempfile

# A backup keeps verified copies of snapshot manifests in a local cache (dr.repository.
# manifest_cache); the suite's, and the dr processes it starts, go to a folder of its own, not
# to the home of whoever runs the tests.
if "DR_CACHE_DIR" not in os.environ:
    os.environ["DR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dr-test-cache-")
    atexit.register(shutil.rmtree, os.environ["DR_CACHE_DIR"], True)

pytest_plugins = ["tests.fixtures_s3", "tests.fixtures_openbao"]
