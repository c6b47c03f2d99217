"""Code generation takes its semantics from the IR, never from the interpreter: compiling
for the GPU must load neither `intentc.interp` nor `ml_dtypes` (a cold `intentc compile
--target ptx` would pay for both)."""
import subprocess
import sys


def _modules_loaded_by(statement: str) -> set[str]:
    probe = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_nvptx_compile_loads_neither_interpreter_nor_ml_dtypes():
    loaded = _modules_loaded_by("import intentc.codegen.nvptx.compile")
    assert "intentc.codegen.nvptx.compile" in loaded
    forbidden = sorted(m for m in loaded if m.startswith(("intentc.interp", "ml_dtypes")))
    assert forbidden == []


def test_cpu_lowering_loads_no_interpreter():
    loaded = _modules_loaded_by("import intentc.codegen.llvm.kernel, intentc.codegen.cpu.hooks")
    assert "intentc.codegen.llvm.kernel" in loaded
    assert sorted(m for m in loaded if m.startswith(("intentc.interp", "ml_dtypes"))) == []
