"""Unit tests (a package so their module names cannot clash with tests/compat's)."""
