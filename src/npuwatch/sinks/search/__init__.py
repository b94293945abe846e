"""The search-engine sink: ships the journal to Elasticsearch or OpenSearch data streams.

`streams` names the data streams, `documents` turns journal entries into bulk actions with
deterministic ids, `engine` hides the two client libraries behind one small interface,
`templates` writes the index template and lifecycle policy, and `shipper` is the cursor reader
that sends, classifies every item and moves its cursor only over what was accepted.
"""
