"""Redis Cluster: the cluster bus, the cluster state (nodes, slots, epochs) and the slot
routing the dispatcher consults, plugged in at the composition root when
``cluster-enabled yes``.
"""
