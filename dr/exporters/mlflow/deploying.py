"""What an mlflow source needs in a pod (contract v2 run_needs): the tracking server, its login,
and with copy_artifacts the S3 endpoints weights are read from and copied to, with the AWS keys.

The login is MLflow's own environment (requesting.py): MLFLOW_TRACKING_TOKEN, or
MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD. The options do not say which one a server
wants, so all three are asked for as optional keys (an open server needs none) and a note says so.
"""

from __future__ import annotations

import os

from dr.contract import AWS_CREDENTIALS, Credential, RunNeeds
from dr.exporters.mlflow.options import MlflowOptions

AWS_S3 = "https://s3.amazonaws.com"
LOGIN = (Credential("mlflow-tracking-token", "a bearer token for the MLflow tracking server (or give the "
                    "username and password)", env="MLFLOW_TRACKING_TOKEN", optional=True),
         Credential("mlflow-tracking-username", "the MLflow tracking server's basic-auth user",
                    env="MLFLOW_TRACKING_USERNAME", optional=True),
         Credential("mlflow-tracking-password", "that user's password", env="MLFLOW_TRACKING_PASSWORD",
                    optional=True))


def run_needs(options: MlflowOptions, base_dir: str) -> RunNeeds:
    needs = RunNeeds(endpoints=[options.tracking_uri], credentials=list(LOGIN))
    needs.notes.append(f"MLflow {options.tracking_uri}: put a token, or a username and password, in the "
                       "credentials Secret when the server asks for a login")
    if options.copy_artifacts:
        _copies(options, base_dir, needs)
    return needs


def _copies(options: MlflowOptions, base_dir: str, needs: RunNeeds) -> None:
    """Weights are read where versions' sources point (the artifacts destination, or S3 buckets
    known only at run time) and written to copy_to."""
    source_s3 = options.s3_endpoint_url or AWS_S3
    needs.endpoints.append(source_s3)
    needs.notes.append("weights are read from where each version's source points, known only when the backup "
                       f"runs (S3 through {source_s3}, or the tracking server's proxy): allow egress to other "
                       "stores yourself")
    copy_to = options.copy_to or ""
    if copy_to.startswith(("s3://", "s3a://")):
        target = options.copy_s3_endpoint_url or source_s3
        if target not in needs.endpoints:
            needs.endpoints.append(target)
    else:
        path = os.path.normpath(os.path.join(base_dir, copy_to.removeprefix("file://")))
        needs.notes.append(f"weight copies are written to the directory {path}: mount a writable volume "
                           "there yourself (rendered mounts are read-only)")
    needs.credentials += AWS_CREDENTIALS
