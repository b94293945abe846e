"""Cross-device root cause: which device failed first, and who was only waiting.

Fed the topology facts and collective-failure events of `npuwatch.parsers.hccl`, the
Correlator gives incidents (incident.py); the rules follow MindCluster FaultDiag where it is
right and CORRELATION.md §3–4 where it is not.
"""
