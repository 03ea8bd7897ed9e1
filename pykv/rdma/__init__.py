"""RDMA transport for pykv: the Valkey "Redis over RDMA" protocol.

Layers, top to bottom:

* ``session`` / ``window`` / ``messages`` – the sans-IO protocol core (no verbs, no clock);
* ``verbs`` – the backend interface the drivers use (CM events, QP, CQ, MRs);
* ``softfabric`` (a faithful RC emulation over unix sockets and eventfds, for tests and
  hosts without RDMA hardware) and ``pyverbs_backend`` (real rdma_cm + RC QPs) implement it;
* ``endpoint`` drives one connection: completions in, session actions out;
* ``pykv.net.rdma`` is the ``rdma`` connection type of the server; ``client`` is the
  Python client (``RdmaSocket``), ``redis_py`` wraps it as a redis-py ``Connection`` and
  ``cli`` is the one-shot command-line client (``python -m pykv.rdma.cli``).

See README.md in this directory for users (requirements, soft-RoCE, clients, limits).

Importing this package never imports pyverbs; only selecting the pyverbs backend does.
"""
