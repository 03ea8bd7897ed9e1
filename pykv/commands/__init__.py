"""Command families, one module each. Importing a module registers its handlers.

``load_all_commands`` imports every module in this package (and ``pykv.commands.*``
subpackages) so that adding a family is adding a file.
"""
from __future__ import annotations

import importlib
import pkgutil

_loaded = False


def load_all_commands() -> None:
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "registry":
            continue
        importlib.import_module(f"{__name__}.{info.name}")
    _loaded = True
