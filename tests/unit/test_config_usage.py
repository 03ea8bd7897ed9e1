"""Every config setting either acts or says that it does not.

An entry of ``pykv/config/table.py`` that is not flagged ``compat`` (stored only) must be read
by pykv outside the config machinery (``config.<attr>``, ``getattr(cfg, "<attr>")`` or its
name quoted, as ``on_change`` hooks do); a setting nobody reads is accepted but not acted on, and must be
marked; a stored-only setting the code starts reading must lose its mark. The README lists
the stored-only settings, generated from the table.
"""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

from pykv.config.table import ENTRIES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the generic machinery that parses, formats, stores and rewrites every entry alike
MACHINERY = {os.path.join("pykv", "config", name) for name in
             ("table.py", "values.py", "loader.py", "rewrite.py", "__init__.py")}


def _sources() -> str:
    texts = []
    for base, _dirs, files in os.walk(os.path.join(ROOT, "pykv")):
        for name in files:
            path = os.path.join(base, name)
            if name.endswith((".py", ".pyx")) and os.path.relpath(path, ROOT) not in MACHINERY:
                with open(path, encoding="utf-8") as f:
                    texts.append(f.read())
    return "\n".join(texts)


SOURCES = _sources()


def _read_by_code(entry) -> bool:
    names = (entry.name, *entry.aliases)
    attr = re.escape(entry.attr)
    # attribute reads, getattr, and the attribute name as a mapping's value (a table of
    # which option guards what, read with getattr later)
    pattern = "|".join([rf"\.{attr}\b", rf"getattr\(\s*[\w.]+\s*,\s*[\"']{attr}[\"']",
                        rf":\s*[\"']{attr}[\"']"]
                       + [rf"[\"']{re.escape(n)}[\"']" for n in names])
    return re.search(pattern, SOURCES) is not None


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.honoured], ids=lambda e: e.name)
def test_setting_is_acted_on_or_marked_stored_only(entry):
    assert _read_by_code(entry), (
        f"{entry.name} is accepted but nothing in pykv reads it: implement it, or flag it "
        "'compat' (stored only) in pykv/config/table.py and run tools/gen_stored_only.py --write")


# stored-only settings that some code does read, for a side they have in Redis too
READ_BUT_NOT_ACTED_ON = {
    "list-compress-depth": "DEBUG OBJECT shows ql_compressed from it, but list nodes are "
                           "never compressed",
    "maxmemory": "INFO shows it and OBJECT REFCOUNT's shared integers depend on it, but "
                 "nothing limits memory or evicts",
}


@pytest.mark.parametrize("entry", [e for e in ENTRIES if not e.honoured], ids=lambda e: e.name)
def test_a_stored_only_setting_is_not_read(entry):
    """Once code reads a setting flagged stored only (a branch implementing it merged), the
    flag must go: this fails until it does."""
    if entry.name in READ_BUT_NOT_ACTED_ON:
        assert _read_by_code(entry), f"{entry.name} is no longer read: drop it from the list"
    else:
        assert not _read_by_code(entry), (
            f"{entry.name} is flagged stored only ('compat') but pykv reads it now: drop the "
            "flag in pykv/config/table.py and run tools/gen_stored_only.py --write")


def test_extensions_are_not_stored_only():
    assert [e.name for e in ENTRIES if "extension" in e.flags and not e.honoured] == []


def test_readme_lists_the_stored_only_settings():
    spec = importlib.util.spec_from_file_location(
        "gen_stored_only", os.path.join(ROOT, "tools", "gen_stored_only.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert gen.markdown() in readme, "README's stored-only list is stale: " \
        "run tools/gen_stored_only.py --write"
