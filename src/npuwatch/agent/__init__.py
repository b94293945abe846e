"""The per-host agent: the reader, rules and journal threads, and how they start and stop."""
