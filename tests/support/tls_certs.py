"""The mark that skips a test module needing the openssl tool (the ``certs`` and
``other_certs`` fixtures of tests/integration/conftest.py make certificates with it)."""
from __future__ import annotations

import shutil

import pytest

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
