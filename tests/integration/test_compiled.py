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


def _setup_list(name: str) -> list[str]:
    """The string items of the list assigned to ``name`` in setup.py."""
    with open(os.path.join(ROOT, "setup.py")) as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == name):
            return [elt.value for elt in node.value.elts]
    raise AssertionError(f"setup.py has no {name} list")


def _module_name(path: str) -> str:
    return path.rsplit(".", 1)[0].replace("/", ".")


PYX_SOURCES = _setup_list("PYX_MODULES")
PY_SOURCES = _setup_list("COMPILED_PY_MODULES")
EXTENSIONS = [_module_name(p) for p in PYX_SOURCES + PY_SOURCES]


def test_setup_declares_the_protocol_extensions():
    assert {"pykv.protocol._parser", "pykv.protocol._writer",
            "pykv.server._core"} <= set(EXTENSIONS)


@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_is_compiled(name):
    module = importlib.import_module(name)
    assert module.__file__.endswith(".so"), module.__file__
    assert isinstance(module.__spec__.loader, importlib.machinery.ExtensionFileLoader)


@pytest.mark.parametrize("source", PYX_SOURCES)
def test_no_python_twin_can_shadow_a_pyx_module(source):
    assert not os.path.exists(os.path.join(ROOT, source.rsplit(".", 1)[0] + ".py"))


@pytest.mark.parametrize("source", PY_SOURCES)
def test_compiled_python_module_is_not_stale(source):
    """A compiled .py module must be rebuilt after its source changes (setup.py docstring)."""
    module = importlib.import_module(_module_name(source))
    assert os.path.getmtime(module.__file__) >= os.path.getmtime(os.path.join(ROOT, source)), (
        f"{source} changed after it was compiled: run python setup.py build_ext --inplace")


def test_dispatcher_is_the_compiled_core():
    from pykv.server import _core, client
    from pykv.server.server import Server

    assert _core.__file__.endswith(".so")
    assert issubclass(client.Client, _core.ClientCore)
    assert issubclass(Server, _core.ServerCore)
    assert client.Client.execute is _core.ClientCore.execute


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
