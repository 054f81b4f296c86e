"""S3 plumbing shared by every S3 user in dr (the repository's store and the kit's S3 places).

- clients.py  botocore clients configured once (no SDK retries, timeouts, path style) and the
              one judgement of S3 errors (transient or not, missing, described without secrets).
- lean.py     a lean S3 client on the standard library, for the repository's hot requests.
- signing.py  static credentials and SigV4 signing, for the lean client.
"""
