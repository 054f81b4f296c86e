"""Moving checkpoint bytes between places: in parallel, in parts, in bounded memory, hashed.

- transferring.py  Transfer: files streamed (or copied server-side) from one place to another.
- buffers.py       the fixed pool of part buffers that holds every byte in flight.
"""
