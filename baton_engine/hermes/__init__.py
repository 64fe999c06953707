"""Baton inside Hermes Agent: the ONLY package that imports Hermes (lazily, inside functions).

``plugin.register`` is the entry point (``hermes_agent.plugins: baton``); ``engine.BatonContextEngine`` is a thin
adapter over one agent's Baton (``baton_engine.agent.agent.Agent``, its first base); ``request_view`` turns every
request shape Hermes produces into one ``ProviderRequest`` (each agent's frame, route and counts are kept in
``baton_engine.agent.ledger``; the request budgeter, ``baton_engine.agent.requests``, reads requests through
``host.HermesHost``, this edge's ``baton_engine.agent.host.Host``); ``patches`` swaps Hermes' rough estimators for
exact counts and wires the request middleware. The engine's collaborators (the compaction runner, recall, the
pruner, the tools' host, status) are one agent's Baton with no Hermes in it: ``baton_engine.agent``. Importing this
package does not import Hermes, so the CLI works without it; it tells the process runtime how to build itself from
Hermes' config when none was installed (``agent.runtime.set_default_factory(host.host_runtime)``: an engine used
outside the plugin gets the plugin's settings).
"""

from baton_engine.agent.runtime import set_default_factory
from baton_engine.hermes.host import host_runtime

set_default_factory(host_runtime)
