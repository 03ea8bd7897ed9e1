"""Testing helpers: an embedded pykv server for your own tests, and a pytest plugin."""
from pykv.testing.server import Server, free_port

__all__ = ["Server", "free_port"]
