"""Runtimes that launch compiled kernels: `cpu` runs host code JIT-compiled by LLVM."""
