"""KRaft's Raft (KIP-595, KIP-996 pre-vote, KIP-853 dynamic voters), sans-I/O: :class:`~.client.KafkaRaftClient`
and its parts (:mod:`.states`, :mod:`.leader_state`, :mod:`.log`, :mod:`.voters`, :mod:`.reconfig`,
:mod:`.config`), and :class:`~.node.RaftNode`, a node that is only a replica."""
