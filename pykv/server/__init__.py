"""The dispatcher layer: server state, clients, command checks and execution."""
