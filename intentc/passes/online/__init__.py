"""Pieces of the online-reduction pass: matching a normalized summary, building its fold."""
