"""The exporter contract, version 2. Documented in docs/exporters.md; a test keeps them in step.

An exporter is a class registered under the `dr.exporters` entry-point group. dr builds one
instance per plan source and calls, depending on the command:
  discover()  what exists now (the audit's coverage check),
  export()    capture everything as artifacts, each with what restoring it depends on,
  restore()   put artifacts back, one outcome (with a reason) per item.
An exporter never touches the repository: it writes through an ArtifactSink and reads
through a ContentReader, both handed to it by dr.

That is the required part (dr.contract.exporter). What the restore planner, the audit, drills,
`dr status` and `dr deploy render` can also ask of an exporter is an optional capability, each
with its own version (dr.contract.capabilities): planning, audit declarations, outside copies,
checkpoint saves, deploy needs, RTO estimates, drill comparison. The registry detects which an
exporter implements and gives it the defaults of the others, so the core asks every exporter
alike and names none: a built-in has no private path.

Plugins import everything from here: `from dr.contract import Exporter, Planning, Artifact, ...`.
"""

from __future__ import annotations

from dr.contract.capabilities import (CAPABILITIES, AuditDeclarations, Capability, CheckpointSaves, DeployNeeds,
                                      DrillComparison, OutsideCopies, Planning, RtoEstimates)
from dr.contract.declarations import (AnyOf, CheckpointSave, SaveCopy, CopyReport, Destination, FindingCode, NoDestination,
                                      Ordering, OrderingRule, RemapKind, RestoreOption, RestoredContent, Rewrite,
                                      Rewriter, RpoRow, prefix_rewrite)
from dr.contract.exporter import (DETAILS_KEPT, ArtifactSink, Content, ContentReader, Discovered, ExportContext,
                                  Exporter, ExporterOptions, Outcome, OutcomeStatus, PlanDependency, RestoreRequest)
# What a source needs in a pod (dr deploy render): its own module, part of the contract.
from dr.contract.pod_needs import AWS_CREDENTIALS, CREDENTIALS_DIR, ApiRead, ApiWrite, Credential, RunNeeds, Sizing
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.repository.encryption import EncryptionError
from dr.repository.repositories import IntegrityError

__all__ = ["CONTRACT_VERSION", "SUPPORTED_VERSIONS", "AnyOf", "ArtifactSink", "Content", "ContentReader",
           "Destination", "Discovered", "EncryptionError", "ExportContext", "Exporter", "ExporterOptions",
           "IntegrityError", "NoDestination", "Ordering", "OrderingRule", "Outcome", "OutcomeStatus", "PlanDependency",
           "RemapKind", "RestoreOption", "RestoreRequest", "Rewrite", "Rewriter", "RpoRow", "CopyReport",
           "DETAILS_KEPT", "prefix_rewrite", "ApiRead", "ApiWrite", "AWS_CREDENTIALS", "CREDENTIALS_DIR", "Credential", "RunNeeds",
           "CheckpointSave", "SaveCopy", "FindingCode", "RestoredContent", "Sizing", "Artifact", "Dependency", "Sensitivity",
           "CAPABILITIES", "Capability", "Planning", "AuditDeclarations", "OutsideCopies", "CheckpointSaves",
           "DeployNeeds", "RtoEstimates", "DrillComparison"]

CONTRACT_VERSION = 2
# Versions dr still loads: the current one natively, older ones through an adapter
# (dr.contract.adapters). The deprecation policy is in docs/exporters.md.
SUPPORTED_VERSIONS = (1, 2)
