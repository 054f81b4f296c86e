"""Shared pytest setup. Fixtures live in their own modules, registered here."""

pytest_plugins = ["tests.fixtures_s3", "tests.fixtures_openbao"]
