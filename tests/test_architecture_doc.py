"""docs/architecture.md stays true to the code, at package level.

The page names packages and modules in backticks, with paths relative to ``src/safeshare/``:

* a package (a folder with ``__init__.py``) as ``name/``, a subpackage with its whole path
  (``synth/pe/``);
* a top-level module as ``name.py`` (``errors.py``);
* a module anywhere as ``path/file.py``, and a name it defines as ``path/file.py:name``
  (``release/job.py:paid``). Paths not under ``src/safeshare/`` are read from the project root
  (``tests/...``); paths that start with ``../`` lie outside the project and are not checked.

The layer table follows the comment line that holds ``LAYERS_MARKER``: one row per layer, top to
bottom, as pyproject.toml's import-linter contract lists them; its second cell lists the layer's
packages and modules (a name in parentheses is optional in the contract), its third says whether
the siblings "may import each other" (``:`` in the contract) or are "independent" (``|``).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "safeshare"
PAGE = ROOT / "docs" / "architecture.md"
LAYERS_MARKER = "checked by tests/test_architecture_doc.py"

# ``path/file.py`` or ``path/file.py:name``, not part of a longer path (so not ``../x/y.py``)
MODULE_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)(?::(\w+))?")
# a folder in backticks: ``name/`` or ``name/sub/``
FOLDER = re.compile(r"`((?:[\w-]+/)+)`")
# a layer row's cell entry: ``name/``, ``name.py``, or either in parentheses (optional)
ENTRY = re.compile(r"^(\()?`([\w.]+?)(/|\.py)`(\))?$")


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def packages() -> list[str]:
    """Every package and subpackage, as ``name/`` relative to src/safeshare."""
    return sorted(
        f"{init.parent.relative_to(SRC).as_posix()}/"
        for init in SRC.rglob("__init__.py")
        if init.parent != SRC
    )


def top_level_modules() -> list[str]:
    return sorted(path.name for path in SRC.glob("*.py"))


def defined_names(path: Path) -> set[str]:
    """The names a module defines or imports at its top level (inside if/try blocks too)."""
    names: set[str] = set()
    todo = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try):
            todo += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            todo += [child for handler in getattr(node, "handlers", []) for child in handler.body]
    return names


def located(path: str) -> Path | None:
    for base in (SRC, ROOT):
        if (base / path).exists():
            return base / path
    return None


def page_layers() -> list[tuple[list[tuple[str, bool]], str]]:
    """The layer table: per row, its (module, optional) entries and its siblings cell."""
    lines = page().splitlines()
    starts = [i for i, line in enumerate(lines) if LAYERS_MARKER in line]
    assert len(starts) == 1, (
        f"docs/architecture.md needs exactly one comment line holding {LAYERS_MARKER!r} "
        f"just above the layer table; found {len(starts)}"
    )
    rows = []
    for line in lines[starts[0] + 1 :]:
        if not line.strip() and not rows:
            continue
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert len(rows) > 2, "the layer table after the marker has no rows; see this test's docstring"
    layers = []
    for cells in rows[2:]:  # after the header and its |---| line
        assert len(cells) == 3, f"a layer row has three cells (layer | modules | siblings): {cells}"
        entries = []
        for entry in cells[1].split(","):
            found = ENTRY.match(entry.strip())
            assert found and bool(found[1]) == bool(found[4]), (
                f"layer table entry {entry.strip()!r}: write `name/` for a package, `name.py` "
                "for a module, in parentheses where the contract marks it optional"
            )
            entries.append((f"safeshare.{found[2]}", bool(found[1])))
        layers.append((entries, cells[2]))
    return layers


def contract_layers() -> list[tuple[list[tuple[str, bool]], bool]]:
    """The layers contract: per layer, its (module, optional) entries and whether independent.

    As import-linter parses a layer: ``a | b`` independent siblings, ``a : b`` siblings that may
    import each other, ``(a)`` an optional module.
    """
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [
        c for c in config["tool"]["importlinter"]["contracts"] if c.get("type") == "layers"
    ]
    assert len(contracts) == 1, f"expected one layers contract in pyproject.toml: {contracts}"
    layers = []
    for layer in contracts[0]["layers"]:
        independent = ":" not in layer
        parts = [part.strip() for part in re.split(r"[|:]", layer)]
        entries = [(part.strip("()"), part.startswith("(")) for part in parts]
        layers.append((entries, independent))
    return layers


def shown(layers: list[list[tuple[str, bool]]]) -> str:
    """Layers one per line, top first, optional modules in parentheses."""
    return "\n".join(
        "  " + ", ".join(f"({name})" if optional else name for name, optional in entries)
        for entries in layers
    )


def test_every_package_and_top_level_module_is_named():
    text = page()
    missing = [f"`{name}`" for name in packages() + top_level_modules() if f"`{name}`" not in text]
    assert not missing, (
        f"docs/architecture.md names no {', '.join(missing)}: add an entry under 'Packages' "
        "(what it is for, the names to start from, its layer)"
    )


def test_every_path_the_page_names_exists():
    text = page()
    problems = set()
    for path, name in MODULE_PATH.findall(text):
        where = located(path)
        if where is None:
            problems.add(f"{path}: no such file under src/safeshare/ or the project root")
        elif name and name not in defined_names(where):
            problems.add(f"{path}:{name}: {path} defines no {name}")
    for folder in FOLDER.findall(text):
        if located(folder) is None:
            problems.add(f"{folder}: no such folder under src/safeshare/ or the project root")
    assert not problems, (
        "docs/architecture.md names what is not there; fix the page:\n"
        + "\n".join(sorted(problems))
    )


def test_layer_table_matches_the_import_contract():
    page_rows = page_layers()
    contract = contract_layers()
    stated = [sorted(entries) for entries, _ in page_rows]
    enforced = [sorted(entries) for entries, _ in contract]
    assert stated == enforced, (
        "the layer table in docs/architecture.md differs from pyproject.toml's layers contract; "
        "write one row per contract layer, top to bottom, optional ones in parentheses.\n"
        f"page:\n{shown(stated)}\ncontract:\n{shown(enforced)}"
    )
    for (entries, siblings), (_, independent) in zip(page_rows, contract, strict=True):
        if len(entries) > 1:
            expected = "independent" if independent else "may import each other"
            assert siblings == expected, (
                f"layer {[name for name, _ in entries]}: the contract says its siblings are "
                f"{expected!r}; the page says {siblings!r}"
            )


def test_every_package_sits_in_one_layer():
    in_contract = [name for entries, _ in contract_layers() for name, _ in entries]
    tops = {f"safeshare.{path.name}" for path in SRC.iterdir() if (path / "__init__.py").exists()}
    tops |= {f"safeshare.{path.stem}" for path in SRC.glob("*.py")} - {
        "safeshare.__init__",
        "safeshare.__main__",
    }
    unlayered = sorted(tops - set(in_contract))
    assert not unlayered, (
        f"{unlayered} sit in no layer, so no import rule checks them: add each to a layer of "
        "the contract in pyproject.toml and to the layer table in docs/architecture.md"
    )
