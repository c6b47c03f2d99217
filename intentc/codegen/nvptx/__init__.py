"""The NVIDIA backend: the shared KIR→LLVM lowering with NVPTX hooks, PTX through LLVM's
NVPTX target, cubin through ptxas (see docs/gpu.md)."""
