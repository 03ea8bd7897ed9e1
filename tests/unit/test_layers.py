"""The layer contract for the compiled sources, which import-linter does not read.

``lint-imports`` checks the ``.py`` modules against ``[tool.importlinter]`` in
pyproject.toml; this applies the same layer order to the ``import``/``cimport`` lines of the
``.pyx`` and ``.pxd`` files, and checks that the contract itself names every package.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"^\s*(?:from\s+(pykv(?:\.\w+)*)\s+c?import|c?import\s+(pykv(?:\.\w+)*))",
                    re.MULTILINE)


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in contract["layers"]]


def _layer_of(module: str, layers: list[set[str]]) -> int | None:
    for index, names in enumerate(layers):
        if any(module == n or module.startswith(n + ".") for n in names):
            return index
    return None


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_every_package_is_in_a_layer():
    layers = _layers()
    packages = {p.name for p in (ROOT / "pykv").iterdir()
                if (p / "__init__.py").exists() or p.suffix == ".py"}
    packages -= {"__init__.py", "__main__.py", "testing"}
    missing = [name for name in sorted(packages)
               if _layer_of("pykv." + name.removesuffix(".py"), layers) is None]
    assert not missing, f"packages outside the layers contract: {missing}"


def upward_imports(module: str, text: str, layers: list[set[str]]) -> list[str]:
    """The modules ``text`` (the source of ``module``) imports from higher layers."""
    mine = _layer_of(module, layers)
    assert mine is not None, f"{module} is outside the layers contract"
    found = []
    for match in IMPORT.finditer(text):
        target = match.group(1) or match.group(2)
        theirs = _layer_of(target, layers)
        if theirs is not None and theirs < mine:
            found.append(target)
    return found


def test_compiled_sources_import_downwards():
    layers = _layers()
    sources = sorted((ROOT / "pykv").rglob("*.pyx")) + sorted((ROOT / "pykv").rglob("*.pxd"))
    assert sources
    upward = [f"{path.relative_to(ROOT)} imports {target}" for path in sources
              for target in upward_imports(_module_name(path), path.read_text(), layers)]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_the_check_sees_upward_imports():
    source = ("from pykv.protocol._writer cimport write_reply\n"
              "    from pykv.commands.registry import Command\n"
              "cimport pykv.scripting.engine\n")
    assert upward_imports("pykv.storage._fake", source, _layers()) == [
        "pykv.commands.registry", "pykv.scripting.engine"]
