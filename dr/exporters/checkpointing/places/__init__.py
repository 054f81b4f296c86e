"""Places: where checkpoints and their DR copies live (a directory or an S3 prefix).

- local.py      LocalPlace: a directory, written through temporary files and renames.
- s3.py         S3Place: a bucket prefix on one endpoint; listing, reads, small puts.
- s3writing.py  S3 objects written for a copy: resumable multipart uploads, server-side copies.
"""
