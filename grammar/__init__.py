"""The KIR grammar (kir.lark), shipped inside the wheel as `intentc.grammar`."""
