"""The KRaft controller (Kafka's ``QuorumController``, :mod:`.controller`) and its managers: cluster control
(:mod:`.cluster_control`), replication control (:mod:`.replication_control`, with Kafka's partition change
builder in :mod:`.partition_change`), config control (:mod:`.configuration_control`) and KIP-966's Unclean
Recovery Manager (:mod:`.unclean_recovery`)."""
