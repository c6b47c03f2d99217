"""The MMA mapping's sm_90a instruction (placeholder until written)."""
