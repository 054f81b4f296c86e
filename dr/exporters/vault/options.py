"""The `vault` source's options, as a plan writes them (validated when the plan loads).

Credentials are never options: the plan names a file or an environment variable that holds
them, so a plan can be committed and printed. How the Vault unseals is an option because it
is a dependency of every restore (dr.exporters.vault.unsealing turns it into dependencies).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import Field, field_validator, model_validator

from dr.contract import ExporterOptions

ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _one_of(model, file_field: str, env_field: str):
    """A credential comes from a file or an environment variable: exactly one of them."""
    if (getattr(model, file_field) is None) == (getattr(model, env_field) is None):
        raise ValueError(f"give exactly one of {file_field} and {env_field}")
    return model


class TokenAuth(ExporterOptions):
    """A token read from a file or an environment variable (one of them)."""

    method: Literal["token"]  # the login method: token, approle or kubernetes
    token_file: str | None = None  # a file holding the token (relative: the plan's folder)
    token_env: str | None = Field(default=None, pattern=ENV_NAME)  # or an environment variable holding it

    @model_validator(mode="after")
    def _one_place(self) -> "TokenAuth":
        return _one_of(self, "token_file", "token_env")


class AppRoleAuth(ExporterOptions):
    """AppRole login: the role id in the plan (not secret), the secret id from a file or env var."""

    method: Literal["approle"]
    role_id: str  # the AppRole's role id (not secret)
    secret_id_file: str | None = None  # a file holding the secret id
    secret_id_env: str | None = Field(default=None, pattern=ENV_NAME)  # or an environment variable holding it
    mount: str = "approle"  # where the auth method is mounted

    @model_validator(mode="after")
    def _one_place(self) -> "AppRoleAuth":
        return _one_of(self, "secret_id_file", "secret_id_env")


class KubernetesAuth(ExporterOptions):
    """Kubernetes login with the pod's service-account token."""

    method: Literal["kubernetes"]
    role: str  # the Vault role bound to the pod's service account
    jwt_file: str = SERVICE_ACCOUNT_TOKEN  # the service account token
    mount: str = "kubernetes"  # where the auth method is mounted


Auth = Annotated[Union[TokenAuth, AppRoleAuth, KubernetesAuth], Field(discriminator="method")]


class ShamirUnseal(ExporterOptions):
    """Unseal key shares held by named people (custodians): `threshold` of them unseal."""

    type: Literal["shamir"]  # how it unseals: shamir, awskms or transit
    custodians: list[str] = Field(min_length=1)  # who holds the unseal key shares
    threshold: int = Field(ge=1)  # how many shares unseal

    @model_validator(mode="after")
    def _enough(self) -> "ShamirUnseal":
        if self.threshold > len(self.custodians):
            raise ValueError(f"threshold {self.threshold} exceeds the {len(self.custodians)} custodians")
        return self


class AwsKmsUnseal(ExporterOptions):
    """Auto-unseal with an AWS KMS key (`seal "awskms"`): a key id, alias or ARN, and its region."""

    type: Literal["awskms"]
    key_id: str  # the KMS key id, alias or ARN
    region: str  # its region
    endpoint_url: str | None = None  # the KMS endpoint the backup reads the key from (a VPC endpoint, a test server)
    describe_key: bool = True  # read the key's replica regions (DescribeKey) at backup time


class TransitUnseal(ExporterOptions):
    """Auto-unseal through another Vault's transit engine (`seal "transit"`)."""

    type: Literal["transit"]
    address: str  # the Vault whose transit engine unseals this one
    key_name: str  # its transit key
    mount_path: str = "transit"  # where that transit engine is mounted


Unseal = Annotated[Union[ShamirUnseal, AwsKmsUnseal, TransitUnseal], Field(discriminator="type")]


class VaultOptions(ExporterOptions):
    address: str = Field(description="the Vault's API address, https://vault.example.com:8200")
    auth: Auth  # how to log in: method token, approle or kubernetes
    unseal: Unseal  # how the Vault unseals: type shamir, awskms or transit
    namespace: str | None = None  # Vault Enterprise namespaces; OpenBao namespaces
    ca_cert: str | None = None  # a PEM bundle; relative paths resolve against the plan's folder
    tls_skip_verify: bool = False  # do not verify the server's certificate (tests only)
    kv_mounts: list[str] | None = None  # KV mounts whose paths are recorded; default: every KV mount
    # what the record holds of each KV secret: its path (one LIST a folder), or also its versions
    # and times, which cost the server a read a secret (OpenBao lists them with the folder,
    # HashiCorp Vault answers one GET a secret): most of a large Vault's backup, so asked for
    kv_metadata: Literal["paths", "versions"] = "paths"
    timeout_seconds: float = Field(default=60, gt=0)  # per request; also how long a restore waits for the unseal

    @field_validator("address")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"{value!r}: give the API address as http(s)://host[:port]")
        if "@" in value.split("//", 1)[1].split("/", 1)[0]:
            raise ValueError("the address must not hold credentials; use auth")
        return value.rstrip("/")
