"""The `images` exporter: container images copied by digest to DR registries.

Where it sits: dr.backup runs it after the plan's other sources (it `reads_plan_dependencies`:
the images their pod templates, Helm releases and scanners recorded) and calls export();
dr.restore calls restore() with the image records; `dr verify --images` calls verify().
  references  image references, patterns, where a copy goes, backup and cosign tags
  auth        credentials: docker config.json, credential helpers, ECR
  client      the OCI distribution API on requests: auth, retries, streaming, digest checks
  copying     one image tree, bottom-up, blobs in parallel, shared blobs once
  exporting   one backup run: which images, resolve, copy, findings
  records     the catalog record, meta (`provides`, `provides_at`), dependencies, change token
  restoring   push the DR copies into a registry (or check them in place)
  verifying   every recorded manifest and blob of every copy, by digest

What a snapshot holds: one small `image` artifact per image (records.py); the bytes live in
the DR registries.
"""

from dr.exporters.images.exporter import ImagesExporter
from dr.exporters.images.verifying import ImageCheck

__all__ = ["ImageCheck", "ImagesExporter"]
