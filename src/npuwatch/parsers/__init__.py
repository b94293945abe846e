"""Parsers: pure functions from bytes to records. They never touch files, network or clock."""
