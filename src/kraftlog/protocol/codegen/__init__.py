"""The generator of :mod:`kraftlog.protocol.messages` (issue 27; STYLE.md "Generated code is generated").

* :mod:`.spec` -- the table: per API, the core classes and their fields, each resolved against Kafka's
  schema (kraftlog's own fields marked as such);
* :mod:`.schema` -- Kafka's schemas as one tree, read from kio's entity classes or from Kafka's message
  JSON (``schemas/``: GetReplicaLogInfo v0 and ElectLeaders v3, which kio 0.6.5 lacks);
* :mod:`.generate` -- renders the module; ``python -m kraftlog.protocol.codegen`` writes it,
  ``--check`` reports a stale one.

A development tool: nothing at run time imports it.
"""
