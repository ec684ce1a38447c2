"""Names that stay true after a rename: every reference to the package in a docstring (Sphinx roles,
``:mod:`.replies```, ``:func:`~orchestrator.x.f```, relative ones read from the module's package) and
every dotted name of the package in the README and docs/ names something that exists."""

from __future__ import annotations

import importlib
import re

import pytest

from conftest import ROOT

ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|exc|obj):`~?([A-Za-z_.][\w.]*)`")
DOTTED = re.compile(r"`(orchestrator(?:\.[A-Za-z_]\w*)+)")


def resolves(name: str) -> bool:
    """Whether ``orchestrator.a.b.c`` names a module, or an attribute or declared field under one."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            declared = {**getattr(found, "__annotations__", {}), **(getattr(found, "__dataclass_fields__", None) or {})}
            if attr in declared or attr in (getattr(found, "model_fields", None) or {}):
                return True  # a field: declared, set on instances
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def absolute(name: str, module: str, is_package: bool) -> str:
    """A docstring's relative name (``.x``: beside the module, ``..x``: one package up) made absolute."""
    if not name.startswith("."):
        return name
    dots = len(name) - len(name.lstrip("."))
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (dots - 1)]
    return ".".join([*base, name.lstrip(".")]) if name.lstrip(".") else ".".join(base)


def docstring_references() -> list[tuple[str, str]]:
    out = []
    for path in sorted((ROOT / "orchestrator").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        for match in ROLE.finditer(path.read_text(encoding="utf-8")):
            name = absolute(match.group(1), module, is_package)
            if name.startswith("orchestrator"):
                out.append((str(path.relative_to(ROOT)), name))
    return out


def test_every_docstring_reference_to_the_package_resolves():
    found = docstring_references()
    assert len(found) > 300  # the scan reads the package's docstrings
    assert [f"{where}: {name}" for where, name in found if not resolves(name)] == []


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_dotted_name_of_the_package_in_the_docs_resolves(page):
    names = sorted(set(DOTTED.findall(page.read_text(encoding="utf-8"))))
    assert [name for name in names if not resolves(name)] == []


def test_a_dangling_reference_is_found():
    assert not resolves("orchestrator.judging.provider") and not resolves("orchestrator.store.cache.GenerationCache")
    assert resolves("orchestrator.judging.replies") and resolves("orchestrator.records.judgments.Judgment.error_type")
    assert absolute(".replies", "orchestrator.judging.client", False) == "orchestrator.judging.replies"
    assert absolute("..store", "orchestrator.run", True) == "orchestrator.store"
