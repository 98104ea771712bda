"""kraftlog: a Kafka-wire-compatible replicated log with a deterministic simulator.

Implements the replication safety protocol of KIP-497, KIP-903, KIP-966 and KIP-320.
See DESIGN.md (shared) for the architecture: a sans-I/O core driven by drivers.
"""

__version__ = "0.1.0"
