"""Pieces of the address-width pass: integer ranges of index values, address bounds."""
