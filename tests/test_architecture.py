"""The layers in `docs/architecture.md` are what the imports say.

The import graph is computed from the source with `ast`, not by importing it, so every import
counts: module-level ones, function-local ones (deferring an import hides a cycle from the
interpreter, not from the design) and `if TYPE_CHECKING:` ones (a type from a higher layer is a
dependency on that layer just the same, and a cycle of types is still a cycle). The layer table
is read from the document itself, so the page and this test cannot drift apart.

The rules: only the CLI's `dev-cluster` command imports the test bed (`reconciler.devcluster`);
no module imports from a layer above its own; no two modules, and no two packages, import each
other, directly or through others; inside the operator, no module imports from a wing above its
own (the second table of the page) and no two wings import each other; the API's authenticators
never import `api/auth.py`, which combines them. Every failure names the importing file, its
line and the import statement.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "reconciler"
ARCHITECTURE = REPO / "docs" / "architecture.md"
LAYER_BLOCK_START = "<!-- layers: highest first; enforced by tests/test_architecture.py -->"
WING_BLOCK_START = "<!-- operator wings: highest first; enforced by tests/test_architecture.py -->"
OPERATOR = "reconciler.operator"
TEST_BED = "reconciler.devcluster"
TEST_BED_USERS = ("reconciler.cli.devcluster",)


@dataclass(frozen=True)
class Import:
    """One import statement, resolved to the project module it loads."""

    importer: str
    target: str
    path: Path
    line: int
    statement: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}: {self.statement}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """Every import of a project module in `path`, wherever in the file it stands."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", node)
            # `from pkg import mod` loads the submodule; `from mod import name` loads `mod`.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        statement = " ".join((ast.get_source_segment(source, node) or "").split())
        for target in dict.fromkeys(targets):
            if target == "reconciler" or target.startswith("reconciler."):
                yield Import(module, target, path, node.lineno, statement)


@functools.cache
def import_graph() -> tuple[Import, ...]:
    """Parsed once per test session: the source does not change under the tests."""
    modules = project_modules()
    return tuple(
        found for name, path in modules.items() for found in imports_of(name, path, modules)
    )


@dataclass(frozen=True)
class Layer:
    rank: int
    """0 is the highest layer."""
    name: str
    members: tuple[str, ...]
    """Dotted prefixes (`reconciler.api`) or exact modules (`reconciler.remote.client`)."""


def documented_layers(marker: str = LAYER_BLOCK_START) -> list[Layer]:
    """The layer table of `docs/architecture.md` under `marker` (the project's layers, or the
    operator's wings), highest layer first. A row starting with paths (relative to
    `src/reconciler/`), then `──` and the layer's name and purpose, opens a layer; the lines
    below it, up to the next `──`, continue it (more paths left of the `──` column)."""
    text = ARCHITECTURE.read_text()
    assert marker in text, f"{ARCHITECTURE} lost its layer table ({marker})"
    block = text.split(marker, 1)[1].split("```")[1]
    rows: list[tuple[str, list[str]]] = []
    column = 0
    for line in block.splitlines()[1:]:
        if "──" in line:
            column = line.index("──")
            rows.append((line[column + 2 :].split(":")[0].strip(), []))
        if rows:
            rows[-1][1].extend(_member(token) for token in line[:column].split())
    assert rows, f"no layer rows found in {ARCHITECTURE}"
    return [Layer(rank, name, tuple(members)) for rank, (name, members) in enumerate(rows)]


def _member(token: str) -> str:
    assert re.fullmatch(r"[a-z_]+(/[a-z_]+)*(/|\.py)", token), (
        f"not a path in the layer table: {token}"
    )
    dotted = "reconciler." + token.removesuffix("/").removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")


def layer_of(module: str, layers: list[Layer]) -> Layer | None:
    """The layer of the most specific entry naming `module` (a module entry beats its package;
    `__init__.py` is the top-level package's own module, not everything below it)."""
    matches = [
        (len(member), layer)
        for layer in layers
        for member in layer.members
        if module == member or (member != "reconciler" and module.startswith(member + "."))
    ]
    return max(matches, key=lambda match: match[0])[1] if matches else None


def wing_of(module: str, wings: list[Layer]) -> str:
    """The most specific entry of the operator's wing table naming `module`."""
    entries = [member for wing in wings for member in wing.members]
    named = [m for m in entries if module == m or module.startswith(m + ".")]
    return max(named, key=len) if named else module


def package_of(module: str) -> str:
    """`reconciler.api.auth` -> `reconciler.api`; top-level modules stand for themselves."""
    return ".".join(module.split(".")[:2])


def find_cycles(
    imports: Sequence[Import], node_of: Callable[[str], str] = str
) -> list[list[Import]]:
    """One cycle per strongly connected component of the graph whose nodes are `node_of` each
    module (the module itself, or its package), as the import statements that close it."""
    edges: dict[str, dict[str, Import]] = {}
    for found in imports:
        source, target = node_of(found.importer), node_of(found.target)
        if source != target:
            edges.setdefault(source, {}).setdefault(target, found)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_cycle_through(min(component), component, edges, node_of) for component in components]


def _cycle_through(
    start: str,
    component: set[str],
    edges: dict[str, dict[str, Import]],
    node_of: Callable[[str], str],
) -> list[Import]:
    """The shortest path from `start` back to itself inside one strongly connected component."""
    came_from: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt, found in sorted(edges.get(node, {}).items()):
                if nxt not in component or nxt in came_from:
                    continue
                came_from[nxt] = found
                if nxt == start:
                    path = [found]
                    while node_of(path[0].importer) != start:
                        path.insert(0, came_from[node_of(path[0].importer)])
                    return path
                following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - Tarjan found one


def test_only_the_dev_cluster_command_imports_the_test_bed() -> None:
    offenders = [
        str(found)
        for found in import_graph()
        if (found.target == TEST_BED or found.target.startswith(TEST_BED + "."))
        and not (found.importer == TEST_BED or found.importer.startswith(TEST_BED + "."))
        and found.importer not in TEST_BED_USERS
    ]
    assert not offenders, "production code imports the test bed:\n" + "\n".join(offenders)


def test_every_module_belongs_to_a_documented_layer() -> None:
    layers = documented_layers()
    modules = project_modules()
    orphans = [name for name in modules if layer_of(name, layers) is None]
    assert not orphans, f"modules missing from the layer table of {ARCHITECTURE.name}: {orphans}"
    stale = [member for layer in layers for member in layer.members if member not in modules]
    assert not stale, f"the layer table of {ARCHITECTURE.name} names what does not exist: {stale}"


def upward(imports: Sequence[Import], layers: list[Layer]) -> list[str]:
    """The imports of a module from a layer above its own, each with the layers' names."""
    offenders = []
    for found in imports:
        mine, theirs = layer_of(found.importer, layers), layer_of(found.target, layers)
        if mine is not None and theirs is not None and theirs.rank < mine.rank:
            offenders.append(f"{found}  ({mine.name} imports {theirs.name})")
    return offenders


def test_no_module_imports_from_a_higher_layer() -> None:
    offenders = upward(import_graph(), documented_layers())
    assert not offenders, "imports against the layers:\n" + "\n".join(offenders)


def _describe(cycles: list[list[Import]], node_of: Callable[[str], str]) -> str:
    return "\n".join(
        " -> ".join([node_of(cycle[0].importer), *(node_of(found.target) for found in cycle)])
        + "".join(f"\n    {found}" for found in cycle)
        for cycle in cycles
    )


def test_no_import_cycles_between_modules() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles between modules:\n" + _describe(cycles, str)


def test_no_import_cycles_between_packages() -> None:
    """Packages of one layer may use each other, but only one way round."""
    cycles = find_cycles(import_graph(), package_of)
    assert not cycles, "import cycles between packages:\n" + _describe(cycles, package_of)


@pytest.mark.parametrize("module", ["oidc", "identity", "principal", "settings", "routing"])
def test_authenticators_do_not_import_the_module_that_combines_them(module: str) -> None:
    """`api/auth.py` combines the authenticators; they depend on `api/principal.py` only."""
    offenders = [
        str(found)
        for found in import_graph()
        if found.importer == f"reconciler.api.{module}" and found.target == "reconciler.api.auth"
    ]
    assert not offenders, "\n".join(offenders)


def test_the_graph_sees_local_and_type_checking_imports() -> None:
    """The rules are only as good as the graph: imports inside functions and under
    `TYPE_CHECKING` are in it, as are relative imports, resolved to the submodule they load."""
    graph = import_graph()
    edges = {(found.importer, found.target) for found in graph}
    # kube/live.py imports the cluster only for type checking.
    assert ("reconciler.kube.live", "reconciler.kube.cluster") in edges
    # devcluster/__init__.py loads its heavy modules inside `__getattr__`.
    assert ("reconciler.devcluster", "reconciler.devcluster.postgres") in edges
    assert all(found.line > 0 and found.statement.startswith(("from", "import")) for found in graph)


def _operator_imports() -> list[Import]:
    """Imports from one module of the operator to another (the package's own `__init__` holds
    only its docstring and is in no wing)."""
    inside = (OPERATOR + ".",)
    return [
        found
        for found in import_graph()
        if found.importer.startswith(inside) and found.target.startswith(inside)
    ]


def test_every_operator_module_has_a_wing() -> None:
    wings = documented_layers(WING_BLOCK_START)
    modules = project_modules()
    orphans = [
        name
        for name in modules
        if name.startswith(OPERATOR + ".") and layer_of(name, wings) is None
    ]
    assert not orphans, f"operator modules missing from the wing table: {orphans}"
    stale = [member for wing in wings for member in wing.members if member not in modules]
    assert not stale, f"the wing table of {ARCHITECTURE.name} names what does not exist: {stale}"


def test_no_operator_module_imports_from_a_higher_wing() -> None:
    """The operator's inner rule, as kopf's import contracts: the runtime wires the controllers
    and the watcher, they use the catalog, the catalog uses the clusters, and the shared
    modules (settings, metrics, settled runs) use none of them."""
    offenders = upward(_operator_imports(), documented_layers(WING_BLOCK_START))
    assert not offenders, "imports against the operator's wings:\n" + "\n".join(offenders)


def test_no_import_cycles_between_operator_wings() -> None:
    """Wings of one row (the controllers and the watcher) use each other only one way round."""
    wings = documented_layers(WING_BLOCK_START)

    def node_of(module: str) -> str:
        return wing_of(module, wings)

    cycles = find_cycles(_operator_imports(), node_of)
    assert not cycles, "import cycles between operator wings:\n" + _describe(cycles, node_of)


def test_a_cycle_is_reported_as_the_imports_that_close_it() -> None:
    def edge(importer: str, target: str) -> Import:
        return Import(importer, target, PACKAGE / "x.py", 1, f"from {target} import x")

    imports = [edge("r.a", "r.b"), edge("r.b", "r.c"), edge("r.c", "r.a"), edge("r.a", "r.d")]
    assert find_cycles(imports) == [imports[:3]]
    assert find_cycles(imports[:2] + imports[3:]) == []
