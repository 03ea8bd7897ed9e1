"""pykv: a Redis-compatible key-value server in Python (Cython hot paths; TCP, unix, RDMA)."""
__version__ = "0.1.0"
