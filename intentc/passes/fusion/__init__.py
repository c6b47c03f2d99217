"""The three local fusion permissions of spec §5.3–§5.5, one rule per module."""
