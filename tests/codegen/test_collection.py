"""The compile's garbage is collected on a second thread while LLVM emits the PTX
(`codegen/collection.py`): the lowered IR is let go once printed (`LoweredKernel.take_text`),
the collection runs while the block's call has released the GIL, and the block waits for it.
It frees no LLVM object while LLVM works: what it finds, for every sample, is Python's (the
llvmlite IR, never a `llvmlite.binding` object); and were one there, its disposal would wait
for llvmlite's process-wide lock, which the emitting thread holds for the whole call."""
from __future__ import annotations

import gc
import threading
import time

import pytest
from llvmlite import ir
from llvmlite.binding import ffi

from intentc.codegen import collection
from intentc.codegen.collection import collecting_meanwhile
from intentc.codegen.llvm.kernel import LoweredKernel
from intentc.codegen.nvptx.compile import compile_ptx
from intentc.driver import front_end, optimized
from intentc.parse import parse


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_collection_runs_on_another_thread_during_the_block_and_is_done_after_it():
    during = []

    def note(phase, info):
        during.append((phase, threading.current_thread().name, in_block.is_set()))
    in_block = threading.Event()
    gc.disable()
    gc.callbacks.append(note)
    try:
        garbage = [_Cycle() for _ in range(1000)]
        del garbage
        with collecting_meanwhile():
            in_block.set()
            time.sleep(0.05)            # a call that releases the GIL, as llvmlite's do
            in_block.clear()
        assert [phase for phase, *_ in during] == ["start", "stop"]
        assert all(name == "intentc-collect" and inside for _, name, inside in during)
    finally:
        gc.callbacks.remove(note)
        gc.enable()


def test_the_ir_is_let_go_once_printed(root):
    source = (root / "ir_samples" / "vector_add.kir").read_text()
    compiled = compile_ptx(optimized(front_end(source, "vector_add", "ptx", "sm_90")), "vector_add", "sm_90")
    assert ".entry intentc_kernel_vector_add" in compiled.ptx
    assert not compiled.lowered.module.globals              # the IR objects were let go
    assert compiled.lowered.function == "intentc_kernel_vector_add" and compiled.lowered.slots


def test_take_text_is_the_printed_module(root):
    from intentc.codegen.llvm.kernel import lower_kernel
    from intentc.codegen.llvm.printing import module_text
    from intentc.codegen.nvptx.hooks import NvptxHooks
    from intentc.codegen.nvptx.mapping import plan_mapping
    module = parse((root / "ir_samples" / "row_softmax.kir").read_text())
    lowered: LoweredKernel = lower_kernel(module, "row_softmax",
                                          NvptxHooks(plan_mapping(module.find("row_softmax"), None, module, "sm_90")))
    expected = module_text(lowered.module, numbered=True)
    assert lowered.take_text() == expected
    assert not lowered.module.globals and lowered.module.name == "row_softmax"


def _every_sample():
    from bench.gpu_sample_specs import SPECS
    return SPECS


@pytest.fixture
def saved_by_the_collection(monkeypatch):
    """What each background collection finds unreachable, kept (gc.DEBUG_SAVEALL) to be
    inspected: [(llvmlite.binding objects, llvmlite IR instructions)] a collection."""
    found: list[tuple[list, int]] = []

    def collect_saving():
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect(0)
            found.append(([o for o in gc.garbage if isinstance(o, ffi.ObjectRef)],
                          sum(isinstance(o, ir.Instruction) for o in gc.garbage)))
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    monkeypatch.setattr(collection, "_collect", collect_saving)
    yield found
    gc.collect()


def test_the_background_collection_frees_no_llvm_object(saved_by_the_collection):
    """One collection a compile, at its last emit: not at an emit made in the middle of the
    lowering (an inline PTX math template compiled on first use), whose live objects a
    collection would only promote past the compile's end."""
    from bench.compile import compile_args
    from intentc.codegen.nvptx import ptx_math
    from intentc.driver import compile_kernel
    ptx_math.template.cache_clear()
    for spec in _every_sample():
        saved_by_the_collection.clear()
        text, kernel, specialization = compile_args(spec)
        compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
        (bindings, instructions), = saved_by_the_collection      # one collection a compile
        assert bindings == [], spec.id
        assert instructions > 0, spec.id        # it does free the printed IR meanwhile


def test_llvm_calls_wait_for_the_one_in_progress():
    """A disposal on the collector thread is a call through llvmlite's wrapper like any other:
    it cannot start while another thread is inside LLVM."""
    order = []
    with ffi.lib._lock:                     # what a thread inside an LLVM call holds
        other = threading.Thread(target=lambda: (ffi.lib.LLVMPY_GetGlobalContext(), order.append("other")))
        other.start()
        other.join(0.1)
        order.append("main")
    other.join()
    assert order == ["main", "other"]


def test_a_forked_child_gets_its_own_collector():
    """A forked child has none of its parent's threads: the first block there starts one."""
    import os
    with collecting_meanwhile():
        pass                                # the parent's collector, running
    pid = os.fork()
    if pid == 0:                            # the child: its block must end (not wait forever)
        import signal
        signal.alarm(10)                    # (a hung child dies, and the test fails)
        with collecting_meanwhile():
            time.sleep(0.01)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
