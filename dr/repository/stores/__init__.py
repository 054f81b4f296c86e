"""Stores: where a repository's objects live. See base.Store for the contract."""

from dr.repository.stores.base import ObjectExists, ObjectMissing, Store, StoreError, TransientStoreError

__all__ = ["Store", "StoreError", "TransientStoreError", "ObjectMissing", "ObjectExists"]
