"""A session's metrics log (``log.py``: the writer the engine calls), its reading (``read.py``: the report's
data) and the self-contained HTML page (``html.py``). Core: knows nothing of Hermes."""
