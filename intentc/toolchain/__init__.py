"""External tools intentc drives: located once, identified by hash for the cache key."""
