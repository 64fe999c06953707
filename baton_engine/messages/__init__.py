"""What compaction and recall both say about a message: Baton's own markers in a transcript (``markers``) and
a message's recall entry, key and content-addressed ref (``entry``).

Why a room of its own below both: a compaction cites refs and builds the entries recall pages back in, and
recall stubs name the recall tool a compaction's markers mention; with the shared words here, neither room
imports the other. Pure: no I/O, no Hermes import.
"""
