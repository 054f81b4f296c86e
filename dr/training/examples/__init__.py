"""Training loops that speak the progress protocol and save their full state, shipped with dr so
that `dr demo --with-training` and a plain install have them (docs/readiness.md, section 7).

plain_pytorch  a DCP training loop run by torchrun that resumes at any world size; it imports
               torch (the `demo` extra), only when run.
"""
