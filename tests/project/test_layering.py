"""refimpl's import layers (docs: /ARCHITECTURE.md, "Inside refimpl/").

Every ``import`` statement under ``refimpl/`` is read with ``ast`` (at module
level and inside functions; ``if TYPE_CHECKING:`` blocks are ignored: they
never run). Three rules:

1. no upward edge: a module imports only modules of its own layer or below
   (``LAYERS``);
2. no function-local import of a refimpl module, except the lazy backend
   loading in ``LOCAL_IMPORT_ALLOWLIST`` (an import hidden in a function hides a
   dependency, it does not remove it);
3. no import cycle, counting function-local imports and the implicit
   parent-package edge (importing ``refimpl.a.b`` runs ``refimpl/a/__init__.py``).

Today's violations are listed in ``tests/project/layering_debt.txt``. The list may only
shrink: a violation not in it fails, and so does a listed one that is gone (so
that the list stays exact; delete its line). ``python tests/project/test_layering.py``
prints the current numbers; with ``--debt``, the list as it should read; with
``--write``, it rewrites the list in place (keeping its header), to be run only
after a change that removes violations.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "refimpl"
DEBT_FILE = Path(__file__).resolve().parent / "layering_debt.txt"

# Layer of each module: the longest matching prefix wins ("refimpl.lax" covers
# refimpl.lax._dot). Lower numbers are lower layers.
CORE, TRACING, PRIMITIVES, TRANSFORMS, SURFACE, BACKENDS, ENTRY = range(1, 8)
LAYERS: dict[str, int] = {
    # 1 core: dtypes, abstract values and the IR, pytrees, config, errors
    "refimpl.config": CORE,
    "refimpl.errors": CORE,
    "refimpl.dtypes": CORE,
    "refimpl.core": CORE,
    "refimpl.pytree": CORE,
    "refimpl.leak_report": CORE,  # objects and frames only (stdlib imports)
    "refimpl.tree_util": CORE,
    "refimpl.traceback_util": CORE,
    # the registry of extended arrays (typed keys) in the public functions
    "refimpl.extended_arrays": CORE,
    # the backend protocol and registry: names -> modules, imported on first use
    # (the backends themselves are layer 6)
    "refimpl.backends": CORE,
    # masked dims: shape polynomials, part of the abstract values (stdlib only;
    # refimpl/transforms/__init__.py imports no transformation, so importing
    # it from below costs nothing)
    "refimpl.transforms.masking.shape_spec": CORE,
    # the sharding types (Mesh, NamedSharding, PartitionSpec): values that
    # abstract values and arrays name (imports only config and the registry)
    "refimpl.sharding": CORE,
    "refimpl.kv_store": CORE,  # the standard library only
    "refimpl.monitoring": CORE,  # jax.monitoring's listeners: the standard library only
    "refimpl.test_events": CORE,  # counters of traces, lowerings, misses: stdlib only
    # which arguments JAX makes static (the unhashable-static-argument check): stdlib only
    "refimpl._static_args": CORE,
    # the names and docstrings transformed functions carry (JAX's util.wraps): stdlib only
    "refimpl._wraps": CORE,
    # JAX's jaxpr text of a Program (make_jaxpr's str): reads only core and dtypes
    # 2 tracing: the trace stack, Tracer and the operators every array-like shares
    "refimpl.array_ops": TRACING,
    "refimpl.tracing": TRACING,
    "refimpl.array": TRACING,
    # the values jvp and transpose rules exchange (Zero, UndefinedPrimal): the
    # rule interface, not the ad driver (it imports only dtypes and core)
    "refimpl.transforms.ad_util": TRACING,
    # the eager fast-call wrapper that `lax` and `numpy` put on their public
    # functions and that backends register their jit factory or eager memo
    # into: the protocol side, not a backend (it imports only tracing and core)
    "refimpl.backends.fast_functions": TRACING,
    # the wrapper `lax` and `numpy` put on their public functions for operands
    # defining __jax_array__ (it imports only pytree and tracing)
    "refimpl.jax_array_protocol": TRACING,
    # 3 primitives
    "refimpl.primitives": PRIMITIVES,
    # 4 the reference interpreter and the transformations
    "refimpl.interpreter": TRANSFORMS,
    "refimpl.transforms": TRANSFORMS,
    "refimpl.custom_derivatives": TRANSFORMS,
    "refimpl.custom_batching": TRANSFORMS,
    "refimpl.invertible": TRANSFORMS,
    "refimpl.ad_checkpoint": TRANSFORMS,
    # 5 the user surface
    "refimpl.lax": SURFACE,
    "refimpl.numpy": SURFACE,
    "refimpl.random": SURFACE,
    "refimpl.scipy": SURFACE,
    "refimpl.nn": SURFACE,
    "refimpl.debug": SURFACE,
    "refimpl.ref": SURFACE,
    "refimpl.example_libraries": SURFACE,
    "refimpl.experimental": SURFACE,
    "refimpl.test_util": SURFACE,
    "refimpl.callbacks": SURFACE,
    "refimpl.contexts": SURFACE,
    "refimpl.caches": SURFACE,
    "refimpl.introspection": SURFACE,
    # make_jaxpr's JAX-style text and its presentation of refs (both read
    # the ref primitives' indexers)
    "refimpl.jaxpr_text": SURFACE,
    "refimpl.ref_jaxpr": SURFACE,
    "refimpl.key_jaxpr": SURFACE,  # shows refimpl.random's key types in jaxprs
    "refimpl.gradient_utils": SURFACE,
    "refimpl.device_queries": SURFACE,
    "refimpl.dlpack": SURFACE,
    "refimpl.dtypes_api": SURFACE,
    "refimpl.flatten_util": SURFACE,
    "refimpl.ops": SURFACE,
    "refimpl.core_api": SURFACE,
    "refimpl.tree": SURFACE,
    "refimpl.typing": SURFACE,
    "refimpl.stages": SURFACE,  # jax.stages: the types of jit's and pmap's stages
    # 6 backends (ref/, pjrt/ and what runs on them)
    "refimpl.backends.ref": BACKENDS,
    "refimpl.backends.pjrt": BACKENDS,
    "refimpl.backends.placement": BACKENDS,
    "refimpl.distributed": BACKENDS,  # sets up pjrt's client for a multi-process run
    # 7 entry points that assemble everything: the package and the jax alias
    "refimpl": ENTRY,
    "refimpl.as_jax": ENTRY,
}

# Function-local imports that stay: (importer, imported prefix) -> why.
LOCAL_IMPORT_ALLOWLIST: dict[tuple[str, str], str] = {
    # `python -m refimpl.backends.pjrt` parses its arguments before it loads the
    # native extension, so that --help works without it
    ("refimpl.backends.pjrt.__main__", "refimpl.backends.pjrt"): "CLI starts fast",
    # a JAX platform name ("gpu", "tpu") is mapped to a backend by asking the
    # PJRT plugin's platform, only when such a name is used; the native module
    # may be missing (the import fails and the answer is "no pjrt platform")
    ("refimpl.as_jax", "refimpl.backends.pjrt.executables"): "optional native module",
    # the lowering loads jaxlib's MLIR (~150 ms), which a process whose
    # executables all come from the persistent compilation cache never needs
    ("refimpl.backends.pjrt.executables", "refimpl.backends.pjrt.lowering"): "MLIR when used",
}

# Compiled modules inside the package: no Python imports of their own, so no
# edge (`from refimpl import _pjrt` is not an import of refimpl/__init__.py).
NATIVE_EXTENSIONS = {"refimpl._pjrt"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        layer = LAYERS.get(".".join(parts[:n]))
        if layer is not None:
            return layer
    raise KeyError(f"{module} has no layer: add it to LAYERS in {__file__}")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """(node, inside a function) for every import that can run."""

    def visit(node: ast.AST, local: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, local
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                yield from visit(ast.Module(body=child.orelse, type_ignores=[]), local)
            else:
                inner = local or isinstance(
                    child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                )
                yield from visit(child, inner)

    yield from visit(tree, False)


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """(imported refimpl module, function-local, line) for each import in ``path``."""
    is_package = path.name == "__init__.py"
    out = []
    for node, local in _import_nodes(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                # `from pkg import sub` imports the submodule pkg.sub
                sub = f"{stem}.{alias.name}"
                if sub in NATIVE_EXTENSIONS:
                    continue
                targets.append(sub if sub in modules else stem)
        for target in targets:
            if target == "refimpl" or target.startswith("refimpl."):
                while target not in modules:  # `import refimpl.x.Name`-like: its module
                    target = target.rpartition(".")[0]
                out.append((target, local, node.lineno))
    return out


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def _allowed_local(importer: str, imported: str) -> bool:
    return any(
        importer == who and (imported == what or imported.startswith(what + "."))
        for who, what in LOCAL_IMPORT_ALLOWLIST
    )


def analyse() -> dict:
    """The import graph's violations and numbers."""
    modules = all_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    upward: set[str] = set()
    local: set[str] = set()
    local_statements: set[tuple[str, int]] = set()
    for importer, path in modules.items():
        own_ancestors = set(_ancestors(importer))
        for imported, is_local, line in imports_of(importer, path, modules):
            if imported == importer:
                continue
            if is_local:
                if _allowed_local(importer, imported):
                    continue  # lazy loading by design: not a dependency cycle either
                local_statements.add((importer, line))
                local.add(f"local {importer} -> {imported}")
            if layer_of(imported) > layer_of(importer) and imported not in own_ancestors:
                upward.add(f"up {importer} -> {imported}")
            graph[importer].add(imported)
            # importing refimpl.a.b first runs refimpl/a/__init__.py (a package
            # the importer is inside of is already running: no new edge)
            graph[importer].update(
                a for a in _ancestors(imported) if a in modules and a not in own_ancestors
            )
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    return {
        "modules": len(modules),
        "upward": upward,
        "local": local,
        "local_count": len(local_statements),  # import statements, not names
        "cycles": cycles,
        "in_cycle": {f"cycle {m}" for c in cycles for m in c},
    }


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is deep enough to hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    result.append(sorted(component))
    return result


def read_debt() -> tuple[set[str], int]:
    """The listed violations and the recorded count of function-local imports."""
    listed: set[str] = set()
    local_count = -1
    for line in DEBT_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("local-import-count "):
            local_count = int(line.split()[1])
        elif line:
            listed.add(line)
    return listed, local_count


def current_violations(result: dict) -> set[str]:
    return result["upward"] | result["local"] | result["in_cycle"]


def test_every_module_has_a_layer():
    for module in all_modules():
        layer_of(module)


def test_no_new_layer_violation_and_the_debt_list_is_exact():
    result = analyse()
    listed, local_count = read_debt()
    now = current_violations(result)
    new = sorted(now - listed)
    gone = sorted(listed - now)
    assert not new, (
        "new import-layer violations (an import from a higher layer, inside a function, "
        "or in a cycle; "
        "see ARCHITECTURE.md):\n  " + "\n  ".join(new)
    )
    assert not gone, f"fixed, so delete these lines from {DEBT_FILE.name}:\n  " + "\n  ".join(gone)
    assert result["local_count"] == local_count, (
        f"function-local refimpl imports: {result['local_count']}, "
        f"{DEBT_FILE.name} says {local_count}: update its local-import-count line"
    )


def test_the_analysis_sees_an_upward_and_a_local_import(tmp_path):
    # the check must be able to fail: a core module importing the surface
    # inside a function is both an upward and a function-local edge
    source = "def f():\n    from refimpl import lax\n    from . import dtypes\n"
    path = tmp_path / "config.py"
    path.write_text(source)
    found = imports_of("refimpl.config", path, all_modules())
    assert found == [("refimpl.lax", True, 2), ("refimpl.dtypes", True, 3)]
    assert layer_of("refimpl.lax") > layer_of("refimpl.config")


def test_strongly_connected_finds_a_cycle_through_a_package():
    graph = {"p": {"p.a"}, "p.a": {"q.b"}, "q": set(), "q.b": {"p"}}
    assert [c for c in strongly_connected(graph) if len(c) > 1] == [["p", "p.a", "q.b"]]


def _main(argv: list[str]) -> None:
    result = analyse()
    largest = max((len(c) for c in result["cycles"]), default=0)
    print(
        f"modules {result['modules']}; function-local refimpl imports "
        f"{result['local_count']} ({len(result['local'])} distinct edges); "
        f"upward edges {len(result['upward'])}; cycles {len(result['cycles'])}, "
        f"largest {largest} modules",
        file=sys.stderr,
    )
    lines = [f"local-import-count {result['local_count']}"]
    lines += sorted(current_violations(result))
    if "--write" in argv:
        # keep the file's header comment, replace the list
        header = [line for line in DEBT_FILE.read_text().splitlines() if line.startswith("#")]
        DEBT_FILE.write_text("\n".join(header + lines) + "\n")
        print(f"wrote {DEBT_FILE}", file=sys.stderr)
    elif "--debt" in argv:
        print("\n".join(lines))


if __name__ == "__main__":
    _main(sys.argv[1:])
