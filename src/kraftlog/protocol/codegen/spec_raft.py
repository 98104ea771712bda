"""KRaft's quorum rows of the generator's table (:mod:`.spec`): Vote, BeginQuorumEpoch, EndQuorumEpoch and
DescribeQuorum (KIP-595, Vote's PreVote KIP-996), AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter (KIP-853).

Each request and response of the first four names one topic and one partition, ``__cluster_metadata``
partition 0, in Kafka's ``Topics[].Partitions[]`` nesting; the core flattens that away: the partition's fields
are the core class's own (the wire edge, :mod:`kraftlog.protocol.wire`, fills in the topic and partition 0).
Where the partition and the top level both have an error code (message), the partition's is
``partition_error_code`` (``partition_error_message``). Replica and voter ids are ints (-1: none), directory ids
(KIP-853) ``uuid.UUID | None`` (None: none, Kafka's zero UUID), epochs and offsets ints (-1: none), times ms.

A core class lists its required fields first: ``cluster_id`` and ``voter_id`` (defaults from the schema:
None and -1) come last where Kafka has them first.
"""

from __future__ import annotations

from .spec_model import REQUEST, RESPONSE, Api, F, Kio, Struct

_UUID = "uuid.UUID | None"
_ONE_PARTITION = ("One partition of the metadata log (``__cluster_metadata`` partition 0), flattened: Kafka's "
                  "``Topics[].Partitions[]`` hold exactly it.")

RAFT_APIS: tuple[Api, ...] = (
    Api("Vote", 52, 2, Kio(2), title="KRaft quorum: Vote (API key 52, v2; KIP-595, KIP-996)", note=(
        "KRaft's quorum APIs (KIP-595, KIP-853), spoken between the controllers of the metadata quorum. Each names\n"
        "__cluster_metadata partition 0, which the core flattens away (codegen/spec_raft.py)."), classes=(
        Struct("VoteRequest", REQUEST, "", doc=(
            "A candidate (``replica_id``, in its epoch ``replica_epoch``) asks voter ``voter_id`` for its vote\n"
            "(KIP-595); ``pre_vote``: KIP-996's PreVote, asked before the candidate bumps its epoch (the voter\n"
            "grants it without recording a vote). ``last_offset_epoch`` / ``last_offset``: the epoch of the\n"
            "candidate's last batch and its log end offset (a voter grants only a log at least as up to date as\n"
            "its own).\n" + _ONE_PARTITION), fields=(
            F("voter_directory_id", "topics.partitions.voter_directory_id", type=_UUID),
            F("replica_id", "topics.partitions.replica_id", type="int"),
            F("replica_epoch", "topics.partitions.replica_epoch", type="int"),
            F("replica_directory_id", "topics.partitions.replica_directory_id", type=_UUID),
            F("last_offset_epoch", "topics.partitions.last_offset_epoch", type="int"),
            F("last_offset", "topics.partitions.last_offset", type="int"),
            F("pre_vote", "topics.partitions.pre_vote", type="bool"),
            F("cluster_id"),
            F("voter_id"),
        )),
        Struct("VoteResponse", RESPONSE, "", doc=(
            "``error_code``: the top-level error (INCONSISTENT_CLUSTER_ID, INVALID_REQUEST), "
            "``partition_error_code`` the partition's (FENCED_LEADER_EPOCH, ...); ``leader_id`` -1 when unknown.\n"
            + _ONE_PARTITION), fields=(
            F("error_code"),
            F("partition_error_code", "topics.partitions.error_code", type="int"),
            F("leader_id", "topics.partitions.leader_id", type="int"),
            F("leader_epoch", "topics.partitions.leader_epoch", type="int"),
            F("vote_granted", "topics.partitions.vote_granted", type="bool"),
        )),
    )),
    Api("BeginQuorumEpoch", 53, 1, Kio(1), title="BeginQuorumEpoch (API key 53, v1; KIP-595, KIP-853)", classes=(
        Struct("BeginQuorumEpochRequest", REQUEST, "", doc=(
            "The new leader ``leader_id`` of epoch ``leader_epoch`` tells voter ``voter_id`` (KIP-595).\n"
            + _ONE_PARTITION), fields=(
            F("voter_directory_id", "topics.partitions.voter_directory_id", type=_UUID),
            F("leader_id", "topics.partitions.leader_id", type="int"),
            F("leader_epoch", "topics.partitions.leader_epoch", type="int"),
            F("cluster_id"),
            F("voter_id"),
        )),
        Struct("BeginQuorumEpochResponse", RESPONSE, "", doc=_ONE_PARTITION, fields=(
            F("error_code"),
            F("partition_error_code", "topics.partitions.error_code", type="int"),
            F("leader_id", "topics.partitions.leader_id", type="int"),
            F("leader_epoch", "topics.partitions.leader_epoch", type="int"),
        )),
    )),
    Api("EndQuorumEpoch", 54, 1, Kio(1), title="EndQuorumEpoch (API key 54, v1; KIP-595, KIP-853)", classes=(
        Struct("QuorumCandidate", REQUEST, "topics.partitions.preferred_candidates", doc=(
            "A voter the resigning leader prefers as its successor (KIP-853's ReplicaInfo)."), fields=(
            F("candidate_id"),
            F("candidate_directory_id", nullable=True),
        )),
        Struct("EndQuorumEpochRequest", REQUEST, "", doc=(
            "The leader ``leader_id`` resigns epoch ``leader_epoch`` (KIP-595's graceful shutdown); the voters in\n"
            "``preferred_candidates`` (best first) start an election sooner.\n" + _ONE_PARTITION), fields=(
            F("leader_id", "topics.partitions.leader_id", type="int"),
            F("leader_epoch", "topics.partitions.leader_epoch", type="int"),
            F("preferred_candidates", "topics.partitions.preferred_candidates"),
            F("cluster_id"),
        )),
        Struct("EndQuorumEpochResponse", RESPONSE, "", doc=_ONE_PARTITION, fields=(
            F("error_code"),
            F("partition_error_code", "topics.partitions.error_code", type="int"),
            F("leader_id", "topics.partitions.leader_id", type="int"),
            F("leader_epoch", "topics.partitions.leader_epoch", type="int"),
        )),
    )),
    Api("DescribeQuorum", 55, 2, Kio(2), title="DescribeQuorum (API key 55, v2; KIP-595, KIP-853)", classes=(
        Struct("DescribeQuorumRequest", REQUEST, "", doc=(
            "The quorum's state, as the leader sees it (``kafka-metadata-quorum.sh describe``): the request names\n"
            "__cluster_metadata partition 0 and nothing else."), fields=()),
        Struct("QuorumReplicaState", RESPONSE, "topics.partitions.current_voters", doc=(
            "A voter or an observer as the leader sees it: ``log_end_offset`` -1 when unknown; the timestamps are\n"
            "the leader's wall clock (ms), -1 when unknown."), fields=(
            F("replica_id"),
            F("replica_directory_id", nullable=True),
            F("log_end_offset"),
            F("last_fetch_timestamp"),
            F("last_caught_up_timestamp"),
        )),
        Struct("DescribeQuorumResponse", RESPONSE, "", doc=(
            "``error_code`` / ``error_message``: the top level's (v2); ``partition_error_code`` /\n"
            "``partition_error_message``: the partition's (NOT_LEADER_OR_FOLLOWER from a voter that does not lead).\n"
            + _ONE_PARTITION), fields=(
            F("error_code"),
            F("error_message"),
            F("partition_error_code", "topics.partitions.error_code", type="int"),
            F("partition_error_message", "topics.partitions.error_message", type="str | None"),
            F("leader_id", "topics.partitions.leader_id", type="int"),
            F("leader_epoch", "topics.partitions.leader_epoch", type="int"),
            F("high_watermark", "topics.partitions.high_watermark", type="int"),
            F("current_voters", "topics.partitions.current_voters"),
            # the voters' class: the two structs are the same (ReplicaState)
            F("observers", "topics.partitions.observers", type="tuple[QuorumReplicaState, ...]"),
        )),
    )),
    Api("FetchSnapshot", 59, 1, Kio(1), title="FetchSnapshot (API key 59, v1; KIP-630, KIP-853)", classes=(
        Struct("FetchSnapshotRequest", REQUEST, "", doc=(
            "A fetcher (``replica_id``; -1 for none) reads the snapshot (``snapshot_end_offset``, ``snapshot_epoch``)\n"
            "from byte ``position`` on, at most ``max_bytes`` (KIP-630): what a Fetch answered with a SnapshotId\n"
            "because its offset was below the log start offset.\n" + _ONE_PARTITION), fields=(
            F("current_leader_epoch", "topics.partitions.current_leader_epoch", type="int"),
            F("snapshot_end_offset", "topics.partitions.snapshot_id.end_offset", type="int"),
            F("snapshot_epoch", "topics.partitions.snapshot_id.epoch", type="int"),
            F("position", "topics.partitions.position", type="int"),
            F("cluster_id"),
            F("replica_id"),
            F("max_bytes"),
            F("replica_directory_id", "topics.partitions.replica_directory_id", type=_UUID, default=None,
              version=1),
        )),
        Struct("FetchSnapshotResponse", RESPONSE, "", doc=(
            "``error_code``: the top level's (INCONSISTENT_CLUSTER_ID); ``partition_error_code``: the partition's\n"
            "(SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, ...). ``size``: the whole snapshot's bytes; ``position``:\n"
            "where ``unaligned_records`` starts in it.\n" + _ONE_PARTITION), fields=(
            F("error_code"),
            F("partition_error_code", "topics.partitions.error_code", type="int"),
            F("snapshot_end_offset", "topics.partitions.snapshot_id.end_offset", type="int"),
            F("snapshot_epoch", "topics.partitions.snapshot_id.epoch", type="int"),
            F("current_leader_id", "topics.partitions.current_leader.leader_id", type="int", default=-1),
            F("current_leader_epoch", "topics.partitions.current_leader.leader_epoch", type="int", default=-1),
            F("size", "topics.partitions.size", type="int", default=-1),
            F("position", "topics.partitions.position", type="int", default=-1),
            F("unaligned_records", "topics.partitions.unaligned_records", type="bytes", default=b""),
        )),
    )),
    Api("AddRaftVoter", 80, 0, Kio(0), title="AddRaftVoter (API key 80, v0; KIP-853)", classes=(
        Struct("AddRaftVoterRequest", REQUEST, "", doc=(
            "Add voter (``voter_id``, ``voter_directory_id``) to the quorum (KIP-853, ``kraft.version`` 1); the\n"
            "leader answers once the new voter set commits or after ``timeout_ms``."), fields=(
            F("cluster_id"),
            F("timeout_ms"),
            F("voter_id"),
            F("voter_directory_id", nullable=True),
            # the endpoints as raft_records.RaftEndpoint, the class VotersRecord holds them in
            F("listeners", type="tuple[RaftEndpoint, ...]"),
        )),
        Struct("AddRaftVoterResponse", RESPONSE, "", fields=(
            F("error_code"), F("error_message"), F("throttle_time_ms", default=0))),
    )),
    Api("RemoveRaftVoter", 81, 0, Kio(0), title="RemoveRaftVoter (API key 81, v0; KIP-853)", classes=(
        Struct("RemoveRaftVoterRequest", REQUEST, "", doc=(
            "Remove voter (``voter_id``, ``voter_directory_id``) from the quorum (KIP-853)."), fields=(
            F("cluster_id"),
            F("voter_id"),
            F("voter_directory_id", nullable=True),
        )),
        Struct("RemoveRaftVoterResponse", RESPONSE, "", fields=(
            F("error_code"), F("error_message"), F("throttle_time_ms", default=0))),
    )),
    Api("UpdateRaftVoter", 82, 0, Kio(0), title="UpdateRaftVoter (API key 82, v0; KIP-853)", classes=(
        Struct("UpdateRaftVoterRequest", REQUEST, "", doc=(
            "A voter tells the leader of epoch ``current_leader_epoch`` its endpoints and the ``kraft.version``\n"
            "range it supports, ``[kraft_version_min, kraft_version_max]`` (KIP-853)."), fields=(
            F("cluster_id"),
            F("current_leader_epoch"),
            F("voter_id"),
            F("voter_directory_id", nullable=True),
            F("listeners", type="tuple[RaftEndpoint, ...]"),
            F("kraft_version_min", "k_raft_version_feature.min_supported_version"),
            F("kraft_version_max", "k_raft_version_feature.max_supported_version"),
        )),
        Struct("UpdateRaftVoterResponse", RESPONSE, "", doc=(
            "``current_leader_id`` / ``current_leader_epoch``: Kafka's CurrentLeader (its host and port are not\n"
            "kept: kraftlog's voters find each other by node id)."), fields=(
            F("error_code"),
            F("current_leader_id", "current_leader.leader_id"),
            F("current_leader_epoch", "current_leader.leader_epoch"),
            F("throttle_time_ms", default=0),
        )),
    )),
)
