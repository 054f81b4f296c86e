"""Test harnesses: in-process emulations of the servers the test suite talks to."""

from .kube import EmulatedCluster, Fault, RequestRecord, write_kubeconfig

__all__ = ["EmulatedCluster", "Fault", "RequestRecord", "write_kubeconfig"]
