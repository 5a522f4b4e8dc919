"""Corpora of functions the offload engine was not written for (tests/test_offload_odd_code.py)."""
