"""REPORT.md: the benchmark's figures as one page of sections, each benchmark's text, tables, plots and rows of the
Targets table, rendered from the stored results (``results.json``, ``soak.json``, ``reclaim.json``)."""
