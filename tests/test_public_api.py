"""The public API is what the docs say it is: every name the README and docs/*.md use from
the top-level package (``from hookgate import X`` or ``hookgate.X`` in a Python example)
is exported by ``hookgate.__all__``."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import hookgate

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```(?:python|py)\n(.*?)^```", re.DOTALL | re.MULTILINE)
# For examples that are not whole programs (``...`` lines, fragments): the names still count.
IMPORT_LINE = re.compile(r"^\s*from hookgate import \(?([^)\n]*(?:\n[^)]*)?)\)?", re.MULTILINE)
ATTRIBUTE = re.compile(r"\bhookgate\.([A-Za-z_]\w*)")


def _is_submodule(name: str) -> bool:
    return importlib.util.find_spec(f"hookgate.{name}") is not None


def _names_in(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        names = {
            part.strip().split(" as ")[0]
            for match in IMPORT_LINE.finditer(code)
            for part in match.group(1).replace("\n", ",").split(",")
        }
        names |= set(ATTRIBUTE.findall(code))
        return {name for name in names if name and not name.startswith("#")}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "hookgate":
            names.update(alias.name for alias in node.names)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "hookgate"
        ):
            names.add(node.attr)
    return names


def documented_names() -> dict[str, list[str]]:
    """Each top-level name the docs' Python examples use, with the files that use it."""
    found: dict[str, list[str]] = {}
    for path in DOCS:
        for block in PYTHON_BLOCK.findall(path.read_text()):
            for name in _names_in(block):
                if not _is_submodule(name):
                    found.setdefault(name, []).append(path.name)
    return found


def test_the_docs_use_the_public_api_at_all() -> None:
    # Guards the scan itself: the README's quick start imports the engine from the package.
    assert "Engine" in documented_names()


def test_every_name_the_docs_use_is_exported() -> None:
    missing = {
        name: files
        for name, files in documented_names().items()
        if name not in hookgate.__all__ or not hasattr(hookgate, name)
    }
    assert missing == {}, f"named in the docs but not in hookgate.__all__: {missing}"


def test_every_exported_name_exists() -> None:
    assert [name for name in hookgate.__all__ if not hasattr(hookgate, name)] == []
