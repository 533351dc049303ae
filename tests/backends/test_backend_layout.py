"""The layout rules: ``transforms/jit.py`` knows backends only
through the registry (``refimpl.backends``), and the reference backend's
executor lives in ``backends/ref/``."""

from __future__ import annotations

import ast
import pathlib

import refimpl
from refimpl.backends.ref import backend as ref_backend
from refimpl.backends.ref import execute

_ROOT = pathlib.Path(refimpl.__file__).parent


def _imports(path: pathlib.Path) -> list[tuple[str, int, bool]]:
    """(module, line, at module level) of every import in ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    for node in tree.body:  # `if TYPE_CHECKING:` imports are for annotations, never run
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            top.update(id(child) for child in node.body)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, node.lineno, id(node) in top))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno, id(node) in top) for alias in node.names)
    return found


def test_jit_imports_no_backend_module():
    modules = [m for m, _, _ in _imports(_ROOT / "transforms" / "jit.py")]
    assert [m for m in modules if m.startswith("refimpl.backends.")] == []
    assert "refimpl.interpreter" not in modules  # running a Program is a backend's business


def test_ref_executor_lives_in_the_ref_backend():
    assert ref_backend.execute_ref is execute.execute_ref
    assert not hasattr(refimpl.transforms.jit, "execute_ref")


def test_ref_backend_modules_import_at_module_level_only():
    for path in (_ROOT / "backends" / "ref").glob("*.py"):
        local = [(m, line) for m, line, top in _imports(path) if not top]
        assert local == [], f"{path.name}: function-local imports {local}"
