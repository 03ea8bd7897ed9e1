"""Fixtures shared by the integration tests: TLS material (``certs``: a CA with a server and
a client certificate; ``other_certs``: the same from another CA), made once per module."""
from __future__ import annotations

import pytest

from pykv.testing.certs import TestCerts, make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> TestCerts:
    return make_certs(str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory) -> TestCerts:
    return make_certs(str(tmp_path_factory.mktemp("tls-other")), ca_name="another CA")
