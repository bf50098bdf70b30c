"""Build script for bpe.

Installs two top-level modules:

* ``bpe_fallback`` -- the pure-Python implementation, always.
* ``bpe`` -- the Cython core compiled from ``bpe.pyx`` when that works.  When it does not
  (Cython missing, no working C compiler, ``BPE_PURE_PYTHON=1`` in the environment, or
  ``bpe.pyx`` still being the placeholder), the build prints one line to stderr and writes a
  small generated ``bpe.py`` that re-exports ``bpe_fallback`` instead.  A failed compile never
  fails the install; ``bpe.BACKEND`` tells which one you got (``"cython"`` or ``"python"``).

Metadata lives in pyproject.toml.
"""

import glob
import os
import re
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError

HERE = os.path.dirname(os.path.abspath(__file__))
PYX = "bpe.pyx"
# bpe.pyx includes these (one per subsystem, and the C headers next to them); a change to
# any of them rebuilds the module
PXI = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "_bpe_*.pxi"))
             + glob.glob(os.path.join(HERE, "_bpe_*.h")))
PLACEHOLDER_MARKER = "# bpe-placeholder"

SHIM_DOC = (
    '"""bpe: byte-level BPE tokenizer '
    '(pure-Python backend; the compiled core was not built)."""'
)
SHIM_SOURCE = (
    SHIM_DOC + "\n"
    "from bpe_fallback import *  # noqa: F401,F403\n"
    "from bpe_fallback import __all__, __doc__  # noqa: F401\n"
)


def _pure_python_reason():
    """Why the compiled core must not even be attempted, or None to try building it."""
    flag = os.environ.get("BPE_PURE_PYTHON", "").strip().lower()
    if flag not in ("", "0", "false", "no"):
        return "BPE_PURE_PYTHON is set"
    try:
        with open(os.path.join(HERE, PYX), encoding="utf-8") as f:
            first_line = f.readline()
    except OSError:
        return PYX + " is missing"
    if PLACEHOLDER_MARKER in first_line:
        return "the compiled core is not written yet"
    try:
        import Cython.Build  # noqa: F401
    except ImportError:
        return "Cython is not installed"
    return None


def _failure_reason(exc, compiler):
    """A short, one-line description of why building the extension failed."""
    if isinstance(exc, (CCompilerError, ExecError)):
        cc = getattr(compiler, "compiler_so", None) or getattr(compiler, "cc", None) or "cc"
        if isinstance(cc, (list, tuple)):
            cc = cc[0] if cc else "cc"
        code = re.search(r"exit (?:code|status) (-?\d+)", str(exc))
        return "the C compiler {} failed{}".format(
            cc, " with exit code " + code.group(1) if code else ""
        )
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    text = text if len(text) <= 120 else text[:117] + "..."
    return f"building {PYX} failed: {text}"


def _is_generated_shim(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip() == SHIM_DOC
    except OSError:
        return False


class build_ext_or_fallback(build_ext):
    """build_ext that compiles bpe.pyx, or installs the pure-Python shim as `bpe`."""

    _shim_written = False

    def run(self):
        reason = _pure_python_reason()
        if reason is None:
            try:
                self._cythonize()
                super().run()
            except (Exception, SystemExit) as exc:  # a failed build never fails the install
                reason = _failure_reason(exc, getattr(self, "compiler", None))
        self._copy_stub()
        if reason is None:
            self._remove_stale_shims()
        else:
            sys.stderr.write(
                f"bpe: C extension not built ({reason}); installing the pure-Python backend\n"
            )
            sys.stderr.flush()
            self._write_shims()

    def _copy_stub(self):
        """bpe.pyi (the API for editors and mypy) goes beside either form of `bpe`."""
        src = os.path.join(HERE, "bpe.pyi")
        if os.path.exists(src) and not self.inplace:
            os.makedirs(self.build_lib, exist_ok=True)
            self.copy_file(src, os.path.join(self.build_lib, "bpe.pyi"))

    # -- the compiled path ---------------------------------------------------------------

    def _cythonize(self):
        from Cython.Build import cythonize

        c_dir = os.path.join(self.build_temp, "cython")
        for ext in self.extensions:
            if not any(src.endswith(".pyx") for src in ext.sources):
                continue
            (compiled,) = cythonize(
                [ext],
                compiler_directives={"language_level": "3"},
                build_dir=c_dir,
                include_path=[HERE],
                force=self.force,
                quiet=True,
            )
            # Keep setuptools' own Extension object (it carries build state); swap sources.
            ext.sources = list(compiled.sources)

    def build_extensions(self):
        opt = {"unix": "-O3", "mingw32": "-O3", "cygwin": "-O3", "msvc": "/O2"}.get(
            self.compiler.compiler_type
        )
        if opt:
            for ext in self.extensions:
                if opt not in ext.extra_compile_args:
                    ext.extra_compile_args = list(ext.extra_compile_args) + [opt]
        super().build_extensions()

    # -- the pure-Python path ------------------------------------------------------------

    def _shim_targets(self):
        targets = [os.path.join(self.build_lib, "bpe.py")]
        if self.inplace or getattr(self, "editable_mode", False):
            targets.append(os.path.join(HERE, "bpe.py"))
        return targets

    def _ext_targets(self):
        name = self.get_ext_filename("bpe")
        targets = [os.path.join(self.build_lib, name)]
        if self.inplace or getattr(self, "editable_mode", False):
            targets.append(os.path.join(HERE, os.path.basename(name)))
        return targets

    def _write_shims(self):
        # A compiled module left over from an earlier build would shadow the shim.
        for path in self._ext_targets():
            if os.path.exists(path):
                os.remove(path)
        for path in self._shim_targets():
            if os.path.exists(path) and not _is_generated_shim(path):
                raise RuntimeError(f"refusing to overwrite {path}: not a generated shim")
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(SHIM_SOURCE)
        self._shim_written = True

    def _remove_stale_shims(self):
        for path in self._shim_targets():
            if _is_generated_shim(path):
                os.remove(path)

    # -- what gets installed -------------------------------------------------------------

    def get_outputs(self):
        if self._shim_written:
            return [os.path.join(self.build_lib, "bpe.py")]
        return super().get_outputs()

    def _get_output_mapping(self):
        if not self._shim_written:
            yield from super()._get_output_mapping()
            return
        if self.inplace or getattr(self, "editable_mode", False):
            yield (os.path.join(self.build_lib, "bpe.py"), os.path.join(HERE, "bpe.py"))


setup(
    py_modules=["bpe_fallback"],
    ext_modules=[Extension("bpe", sources=[PYX], depends=PXI, include_dirs=[HERE])],
    cmdclass={"build_ext": build_ext_or_fallback},
)
