"""The host CPU backend: the shared LLVM lowering with host hooks, compiled by LLVM for the
machine it runs on."""
