"""Places: where checkpoints and their DR copies live (a directory or an S3 prefix).

- contract.py     the Place contract, in words, and its errors (transient or permanent).
- conformance.py  the checks every place must pass, importable by third parties.
- local.py        LocalPlace: a directory, written through temporary files and renames.
- s3.py           S3Place: a bucket prefix on one endpoint; listing, reads, small puts.
- s3writing.py    S3 objects written for a copy: resumable multipart uploads, server-side copies.
- retrying.py     RetryingPlace: transient failures retried, outside every place.
- opening.py      open_place: a plan's location as a (retrying) place.
"""
