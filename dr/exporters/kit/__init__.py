"""Connection conventions shared by exporters: the kubeconfig and the TLS/proxy settings.

Exporters are independent plugins (.importlinter), so what several of them need to reach a
cluster or an HTTPS server the way its ecosystem configures it lives here, beside the
contract: kubeconfigs (kubectl's rules) and tls (CA bundles, client certificates, proxies).
"""
