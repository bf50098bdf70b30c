"""docs/api.md's table names real calls: every `name(args)` it shows is a function or method
of the module or of Tokenizer whose parameters have those names (and those defaults, where it
gives one), on both backends."""

import ast
import inspect
import re
from pathlib import Path

import pytest

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"
CALL = re.compile(r"`(?:tok\.|Tokenizer\.)?([A-Za-z_]\w*)\(([^`]*)\)`")


def documented_calls():
    calls = []
    for line in API.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first_cell = line.split(" | ")[0]
            calls += CALL.findall(first_cell)
    return calls


def parameters(args):
    """(name, default text or None) of each parameter the docs write out."""
    out = []
    for part in args.split(","):
        part = part.strip()
        if not part or part in ("*", "...") or part.startswith("**"):
            continue
        name, _, default = part.partition("=")
        if not name.strip().isidentifier():
            continue  # prose, e.g. "str_or_bytes" is a name, "ids, ..." is not
        out.append((name.strip(), default.strip() or None))
    return out


def test_the_table_lists_calls():
    assert len(documented_calls()) > 20


@pytest.mark.parametrize("name,args", documented_calls())
def test_documented_parameters_exist(mod, name, args):
    target = getattr(mod, name, None) or getattr(mod.Tokenizer, name, None)
    assert callable(target), f"docs/api.md documents {name}(), which is not in {mod.__name__}"
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        pytest.skip(f"{name} has no introspectable signature")
    real = signature.parameters
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in real.values())
    for param, default in parameters(args):
        if param not in real:
            assert takes_kwargs, f"docs/api.md: {name}() has no parameter {param!r}"
            continue
        if default is None or default == "...":
            continue
        try:
            shown = ast.literal_eval(default)
        except ValueError:
            continue  # a name, not a literal
        assert real[param].default == shown, (name, param, default, real[param].default)
