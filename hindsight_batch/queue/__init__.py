"""Retain queues: the two layouts, the lock protocol, and the flush that drains them."""
