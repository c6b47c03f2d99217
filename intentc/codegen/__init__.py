"""Code generation: verified KIR → target code. `llvm/` holds the target-neutral lowering to
LLVM IR; each backend supplies a `TargetHooks` for what differs between targets."""
