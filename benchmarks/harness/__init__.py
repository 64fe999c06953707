"""What every benchmark shares: the workloads, the engines under comparison (arms), the judge that counts what
each arm sends, and the small helpers of the figures (percentiles, markdown tables, the machine)."""
