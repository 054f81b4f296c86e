"""The `images` exporter: container images copied by digest to DR registries, or into dr's own
repository (`store`), or both.

Where it sits: dr.backup runs it after the plan's other sources (it `reads_plan_dependencies`:
the images their pod templates, Helm releases and scanners recorded) and calls export();
dr.restore calls restore() with the image records; `dr verify` (and `dr verify --images`, the image copies alone) calls verify().
  references  image references, patterns, where a copy goes, backup and cosign tags
  copying     one image tree, bottom-up, blobs in parallel, shared blobs once
  exporting   one backup run: which images, resolve, copy, findings
  storing     images into dr's repository: one `image-blob` artifact per manifest and blob
  records     the catalog record, meta (`provides`, `provides_at`), dependencies, change token
  restoring   push the DR copies into a registry (or check them in place)
  pushing     push an image from dr's repository into a registry, every digest verified
  verifying   every recorded manifest and blob of every copy, by digest

The registry client and its credentials are the kit's (dr.kits.oci), shared with helm.

What a snapshot holds: one small `image` artifact per image (records.py); the bytes live in
the DR registries, or (`store: repository|both`) in `image-blob` artifacts beside the records.
"""

from dr.exporters.images.exporter import ImagesExporter
from dr.exporters.images.verifying import ImageCheck

__all__ = ["ImageCheck", "ImagesExporter"]
