"""Stores: where a repository's objects live. See base.Store for the contract; placing.PlaceStore
gives it over the kit's places (local.py: a directory, s3.py: an S3 prefix)."""

from dr.repository.stores.base import ObjectExists, ObjectMissing, Store, StoreError, TransientStoreError

__all__ = ["Store", "StoreError", "TransientStoreError", "ObjectMissing", "ObjectExists"]
