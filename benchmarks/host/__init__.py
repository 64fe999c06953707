"""The host's side: many agents in one process, a busy gateway, one agent's tokenizer start, the state kept per
route, and the memory every cache may hold."""
