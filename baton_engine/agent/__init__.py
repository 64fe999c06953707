"""One agent's Baton, with no host in it: what one agent's context engine decides, keeps and says, whatever
agent runs it.

Why a room of its own: this logic does not depend on Hermes, so it belongs in the core where it can be read and
tested without a host installed. The host plugs in from an edge (``baton_engine.hermes``), which imports this
package; nothing here imports Hermes or the edge. So far: ``tools`` (the baton_capture / baton_resume /
baton_status / baton_recall contract, answered through ``operations``), ``metrics`` (what the engine writes to
its session's metrics log), ``notices`` (what the user is told on the terminal, once per condition), ``ledger``
(its route, the frame of its last request, one count per request view), ``memos`` (its per-message memos,
over the projection its host passes in), ``runtime`` (the process runtime its agents share: settings, a counter
per tokenizer, live engines; the host passes in its view and project settings and sets the default factory),
``project`` (the project an agent works in and its settings), ``requests`` (the request budgeter: one count per
request view, the window, ``budget.decide`` on each request), ``recall_binding`` (where ``baton_recall`` reads),
``compaction_line`` (the line a host shows per automatic compaction), ``compactions`` (the compaction runner: when
to compact, the cycle, the session's lineage and draft), ``status`` (what the agent says of itself), ``pruner``
(the host's prune hook answered by the core's decision), ``tool_handler`` (the tools' host, over the runner and
recall), ``agent`` (``Agent``: the whole, its collaborators built around its host, and what a host's hooks ask
of them) and ``host`` (``Host``: what one agent's Baton asks of its host, which the host implements once at its
edge; Hermes: ``hermes/host.HermesHost``).
"""
