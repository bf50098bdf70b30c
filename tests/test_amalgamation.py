"""bpe_fallback.py is generated from the modules of fallback/ by tools/amalgamate.py: the
committed file is exactly what the script makes, the modules form layers (each imports only
from the modules before it), no two modules define one name (in one file the later would
silently replace the earlier), and the package imports as it stands."""

import ast
import importlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "fallback")


def layers():
    tree = ast.parse(open(os.path.join(PACKAGE, "__init__.py"), encoding="utf-8").read())
    return next(ast.literal_eval(n.value) for n in tree.body
                if isinstance(n, ast.Assign) and n.targets[0].id == "LAYERS")


def module_tree(name):
    with open(os.path.join(PACKAGE, name + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read())


def test_every_module_is_a_layer():
    listed = set(layers())
    present = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py") and f != "__init__.py"}
    assert present == listed


def test_bpe_fallback_is_what_the_modules_make():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "amalgamate.py"),
                             "--check"], capture_output=True, text=True)
    assert result.returncode == 0, (result.stdout + result.stderr
                                    + "\nrun `python tools/amalgamate.py` after editing fallback/")


def test_modules_import_only_earlier_modules():
    order = {name: k for k, name in enumerate(layers())}
    for name in order:
        for node in ast.walk(module_tree(name)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module in order, (name, node.module)
                assert order[node.module] < order[name], (
                    f"fallback/{name}.py imports from the later module {node.module}")


def test_no_name_is_defined_in_two_modules():
    seen = {}
    for name in layers():
        for node in module_tree(name).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined = [node.name]
            elif isinstance(node, ast.Assign):
                defined = [t.id for t in node.targets if isinstance(t, ast.Name)]
            else:
                continue
            for d in defined:
                assert seen.setdefault(d, name) == name, (
                    f"{d} is defined in fallback/{seen[d]}.py and fallback/{name}.py")


def test_the_package_imports_layer_by_layer():
    sys.path.insert(0, ROOT)
    try:
        for name in layers():
            importlib.import_module(f"fallback.{name}")
    finally:
        sys.path.remove(ROOT)


def test_hand_edited_python_files_stay_small():
    generated = {"bpe_fallback.py", os.path.join("tools", "bench.py")}  # and the peers' table
    long = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "dist")]
        for f in files:
            path = os.path.relpath(os.path.join(folder, f), ROOT)
            if f.endswith(".py") and path not in generated:
                with open(os.path.join(ROOT, path), encoding="utf-8") as text:
                    n = sum(1 for _ in text)
                if n > 1500:
                    long.append(f"{path} ({n} lines)")
    assert not long, "cut these into modules: " + ", ".join(long)
