"""Static checks over the whole package, so that its structure stays as designed.

Each check walks the source with :mod:`ast` (nothing is imported except for the
``dir(pearlstats)`` check) and names the offending file, line and function, so a
failure says exactly what to change.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pearlstats"
MAX_FUNCTION_LINES = 80

# Files that already pass the ruff and annotation checks; they are checked strictly so they stay
# clean. The whole-package versions of those checks are xfail while other files are being edited.
FINISHED = (
    "pearlstats/__init__.py",
    "pearlstats/checks.py",
    "pearlstats/demo.py",
    "pearlstats/exceptions.py",
    "pearlstats/experiments/",
    "pearlstats/families.py",
    "pearlstats/fitting.py",
    "pearlstats/inference/",
    "pearlstats/ledger.py",
    "pearlstats/nested.py",
    "pearlstats/plotting/",
    "pearlstats/stages.py",
    "pearlstats/datasets/__init__.py",
    "pearlstats/datasets/simulation.py",
    "pearlstats/design/",
    "pearlstats/in_memory_only.py",
    "pearlstats/engines/",
    "pearlstats/representations/__init__.py",
    "pearlstats/representations/_checks.py",
    "pearlstats/representations/_rows.py",
    "pearlstats/representations/base.py",
    "pearlstats/representations/kernel_pca.py",
    "pearlstats/representations/kernels.py",
    "pearlstats/representations/pca.py",
    "pearlstats/representations/pretrained.py",
    "pearlstats/representations/text.py",
    "pearlstats/representations/word_vectors.py",
    "pearlstats/representations/deep/",
    "pearlstats/results/__init__.py",
    "pearlstats/results/averaging.py",
    "pearlstats/results/bootstrap.py",
    "pearlstats/results/core.py",
    "pearlstats/results/diagnostics.py",
    "pearlstats/results/evaluation.py",
    "pearlstats/results/formatting.py",
    "pearlstats/results/latex.py",
    "pearlstats/results/prediction.py",
    "pearlstats/results/refits.py",
    "pearlstats/results/risks.py",
    "pearlstats/results/sections.py",
    "pearlstats/results/summary.py",
    "pearlstats/results/text_layout.py",
    "pearlstats/weights/",
)
BEING_EDITED = (
    "files still being edited by other engineers; the lead removes the xfail after the final pass"
)

# Underscore names that are public API of the standard library (namedtuple methods).
PUBLIC_UNDERSCORE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _finished(path: Path) -> bool:
    name = _relative(path)
    return any(name == f or (f.endswith("/") and name.startswith(f)) for f in FINISHED)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


# ---- private attributes ------------------------------------------------------------------------


def _names_defined(tree: ast.Module) -> set[str]:
    """Every name a module defines: functions, classes, assigned names and assigned attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Name,)) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)  # e.g. dataclasses.replace(x, _field=...), setattr-style records
    return names


def _own_receiver(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in {"self", "cls"}
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def private_attribute_reads(path: Path, label: str | None = None) -> list[str]:
    """``x._name`` where ``x`` is not self/cls/super() and ``_name`` is defined elsewhere."""
    tree = _tree(path)
    own = _names_defined(tree)
    label = label or _relative(path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if _own_receiver(node.value) or name in own or name in PUBLIC_UNDERSCORE:
            continue
        found.append(f"{label}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reads_another_modules_private_attributes():
    found = [hit for path in _modules() for hit in private_attribute_reads(path)]
    assert not found, "private attributes read across modules:\n" + "\n".join(found)


def test_private_attribute_check_catches_a_foreign_read(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "class A:\n    def f(self, other):\n        self._mine = 1\n"
        "        return self._mine + other._theirs + super()._base\n"
    )
    found = private_attribute_reads(module, "m.py")
    assert [hit.split(": ")[1] for hit in found] == ["other._theirs"]


# ---- function length ---------------------------------------------------------------------------


def code_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> int:
    """Non-blank, non-comment lines of a function (signature included), docstring excluded."""
    skip: set[int] = set()
    first = function.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        skip = set(range(first.lineno, first.end_lineno + 1))
    start = min([function.lineno] + [d.lineno for d in function.decorator_list])
    count = 0
    for number in range(start, function.end_lineno + 1):
        text = source[number - 1].strip()
        if number not in skip and text and not text.startswith("#"):
            count += 1
    return count


def long_functions(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8").splitlines()
    return [
        f"{_relative(path)}:{function.lineno}: {function.name} has {n} lines of code"
        for function in _functions(_tree(path))
        if (n := code_lines(function, source)) > MAX_FUNCTION_LINES
    ]


def test_no_function_is_longer_than_80_lines_of_code():
    found = [hit for path in _modules() for hit in long_functions(path)]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines of code:\n" + "\n".join(found)


def test_code_lines_excludes_the_docstring_blank_lines_and_comments():
    source = 'def f(x):\n    """Doc.\n\n    More.\n    """\n\n    # why\n    return x\n'
    function = ast.parse(source).body[0]
    assert code_lines(function, source.splitlines()) == 2


# ---- one place builds PearlResults -------------------------------------------------------------


class _CallSites(ast.NodeVisitor):
    """Innermost enclosing function (or ``<module>``) of every call to *name*."""

    def __init__(self, name: str) -> None:
        self.name, self.stack, self.sites = name, ["<module>"], []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called == self.name:
            self.sites.append(self.stack[-1])
        self.generic_visit(node)


def test_pearl_results_is_built_in_exactly_one_place():
    places = []
    for path in _modules():
        finder = _CallSites("PearlResults")
        finder.visit(_tree(path))
        places += [(_relative(path), site) for site in finder.sites]
    assert places == [("pearlstats/results/core.py", "results_from_state")], places


# ---- layers (import-linter) --------------------------------------------------------------------


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """Run import-linter on the package in *root* with the contracts of its pyproject.toml.

    import-linter puts the working directory first on the path, so the package analysed is the
    one in *root* (this worktree's), not an installed copy; ``--no-cache`` writes nothing there.
    """
    if shutil.which("lint-imports") is None:
        pytest.skip("import-linter is not installed (pip install 'pearlstats[test]')")
    return subprocess.run(
        ["lint-imports", "--no-cache", "--config", "pyproject.toml"],
        cwd=root, capture_output=True, text=True,
    )


def test_the_package_keeps_its_layers():
    """pyproject.toml's layers contract: each module imports only from the layers below it."""
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout, result.stdout


def test_the_layers_contract_has_no_ignored_imports():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert [c["type"] for c in contracts] == ["layers"]
    assert "ignore_imports" not in contracts[0], "the layers contract must not ignore imports"


def test_the_layers_check_names_an_import_that_breaks_them(tmp_path):
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("X = 1\n")
    (package / "low.py").write_text("from toy.high import X\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_package = "toy"\n\n[[tool.importlinter.contracts]]\n'
        'name = "toy layers"\ntype = "layers"\nlayers = ["toy.high", "toy.low"]\n'
    )
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "toy.low -> toy.high (l.1)" in result.stdout, result.stdout


# ---- the public namespace ----------------------------------------------------------------------


def test_the_weight_losses_do_not_import_the_families_that_import_them():
    # The circle engines.wide -> families -> weights.losses -> families is gone. The layers
    # contract lets siblings import each other (and does not see imports inside functions), so
    # this reads every import of the module, at any depth.
    tree = ast.parse((ROOT / "pearlstats" / "weights" / "losses.py").read_text())
    sources = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    sources += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names]
    assert not [m for m in sources if "families" in m or "engines" in m], sources


def test_dir_lists_exactly_the_public_names_and_plotting_is_reachable():
    import pearlstats

    assert dir(pearlstats) == sorted(pearlstats.__all__)
    assert len(set(pearlstats.__all__)) == len(pearlstats.__all__), "a name is exported twice"
    for name in pearlstats.__all__:
        assert getattr(pearlstats, name) is not None, name
    assert pearlstats.plotting.__name__ == "pearlstats.plotting"
    assert callable(pearlstats.plotting.plot_risk_ratio)


# ---- ruff --------------------------------------------------------------------------------------


def _ruff(*paths: str) -> subprocess.CompletedProcess:
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (pip install 'pearlstats[test]')")
    return subprocess.run(
        ["ruff", "check", "--no-cache", *paths], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_passes_on_the_finished_files():
    result = _ruff(*FINISHED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_passes_on_the_package_and_the_tests():
    result = _ruff("pearlstats", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_passes_on_the_vignettes_and_benchmarks():
    result = _ruff("vignettes", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


# ---- annotations -------------------------------------------------------------------------------


def _public_functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    """Module-level public functions and public methods (with ``__init__``) of public classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):
                yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    not item.name.startswith("_") or item.name in {"__init__", "__call__"}
                ):
                    yield f"{node.name}.{item.name}", item


def missing_annotations(path: Path) -> list[str]:
    """Public signatures with an unannotated parameter or (except ``__init__``) no return type."""
    found = []
    for name, function in _public_functions(_tree(path)):
        args = function.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if params and "." in name and params[0].arg in {"self", "cls"}:
            params = params[1:]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        missing = [p.arg for p in params if p.annotation is None]
        if function.returns is None and not name.endswith("__init__"):
            missing.append("return")
        if missing:
            found.append(f"{_relative(path)}:{function.lineno}: {name} ({', '.join(missing)})")
    return found


def test_public_signatures_of_the_finished_files_are_annotated():
    found = [hit for path in _modules() if _finished(path) for hit in missing_annotations(path)]
    assert not found, "unannotated public signatures:\n" + "\n".join(found)


def test_public_signatures_of_the_whole_package_are_annotated():
    found = [hit for path in _modules() for hit in missing_annotations(path)]
    files = sorted({hit.split(":")[0] for hit in found})
    assert not found, f"unannotated public signatures in {files}:\n" + "\n".join(found)


if __name__ == "__main__":  # python tests/test_architecture.py lists what is left to do
    for check in (private_attribute_reads, long_functions, missing_annotations):
        for module in _modules():
            for hit in check(module):
                print(check.__name__, hit, file=sys.stdout)
