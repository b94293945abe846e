"""The journal: the durable local store of records and events, read by sinks and `grep`."""
