"""Test helpers shared by several test modules (importable as ``helpers`` from tests/)."""
