"""The cycle collector is paused during a compile and resumed (with the young garbage
collected) when the outermost compile ends; a collector the caller disabled stays off."""
import gc
import threading
from pathlib import Path

from intentc.driver import compile_kernel
from intentc.driver.collector import collector_paused

SOURCE = (Path(__file__).parents[2] / "ir_samples" / "vector_add.kir").read_text()


def test_nested_pauses_resume_once():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_compile_collects_while_llvm_emits_and_once_at_its_end():
    seen = []

    def note(phase, info):
        if phase == "start":
            seen.append((threading.current_thread().name, gc.isenabled(), info["generation"]))
    gc.callbacks.append(note)
    try:
        compile_kernel(SOURCE, "vector_add", "ptx", "sm_90")
    finally:
        gc.callbacks.remove(note)
    assert gc.isenabled()
    # no automatic collection during the compile: one young one on the collector thread while
    # LLVM emits the PTX (codegen/collection.py), one at the compile's end
    assert seen == [("intentc-collect", False, 0), (threading.current_thread().name, True, 0)]
