"""The cluster correlator (`npuwatch correlate`): the agents' topology facts, collective events
and heartbeats read from the search engine, fed to the offline root-cause engine, and its
verdicts written back as incidents (docs/adr/0003-live-incidents.md)."""
