"""The compiled Cython modules are the ones in use: no pure-Python fallback, in-process or in
a server started elsewhere.

The list of extensions is read from ``setup.py`` so a new extension is covered as soon as it
is declared there.
"""
from __future__ import annotations

import ast
import importlib
import importlib.machinery
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def declared_extensions() -> list[str]:
    """Module names of every ``Extension("name", ...)`` in setup.py."""
    with open(os.path.join(ROOT, "setup.py")) as fh:
        tree = ast.parse(fh.read())
    names = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension"
                and node.args and isinstance(node.args[0], ast.Constant)):
            names.append(node.args[0].value)
    return names


EXTENSIONS = declared_extensions()


def test_setup_declares_the_protocol_extensions():
    assert {"pykv.protocol._parser", "pykv.protocol._writer"} <= set(EXTENSIONS)


@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_is_compiled(name):
    module = importlib.import_module(name)
    assert module.__file__.endswith(".so"), module.__file__
    assert isinstance(module.__spec__.loader, importlib.machinery.ExtensionFileLoader)
    # and no pure-Python module of the same name that could shadow it elsewhere
    base = os.path.join(os.path.dirname(module.__file__), name.rsplit(".", 1)[1])
    assert not os.path.exists(base + ".py")


def test_dispatcher_uses_the_compiled_parser_and_writer():
    from pykv.protocol import _parser, _writer
    from pykv.server import client

    assert client.RequestParser is _parser.RequestParser
    assert client.write_reply is _writer.write_reply
    assert client.ProtocolError is _parser.ProtocolError


def test_installed_package_resolves_to_compiled_modules(tmp_path):
    """From another directory (as the server subprocess runs), the .so files are found."""
    code = ("import importlib, sys\n"
            "for n in sys.argv[1:]:\n"
            "    print(importlib.import_module(n).__file__)\n")
    out = subprocess.run([sys.executable, "-c", code, *EXTENSIONS], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=True)
    files = out.stdout.split()
    assert len(files) == len(EXTENSIONS)
    assert all(f.endswith(".so") for f in files), files
