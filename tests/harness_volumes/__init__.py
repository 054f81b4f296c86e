"""Tests of the volume harness: the CSI driver, kubelet/Job controller and pod proxy stand-ins."""
