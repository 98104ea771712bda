"""The group coordinator's rows of the generator's table (:mod:`.spec`): FindCoordinator, the offsets, producer
ids, the classic group protocol and the group admin APIs (ListGroups, DescribeGroups, DeleteGroups, OffsetDelete)."""

from __future__ import annotations

from .spec_model import REQUEST, REQUIRED, RESPONSE, Api, Const, Expr, F, Kio, Struct

_TOPIC_BY_NAME = 'the topic\'s name (Kafka nests partitions by topic; the core flattens them).'

GROUP_APIS: tuple[Api, ...] = (
    Api("FindCoordinator", 10, 4, Kio(4), title=(
        "group coordinator: FindCoordinator (10, v4),\n# OffsetCommit (8, v8) and OffsetFetch (9, v8). "
        "KIP-320: committed offsets carry the leader epoch."), constants=(
        Const("COORDINATOR_GROUP", "0"),
        Const("COORDINATOR_TRANSACTION", "1", "FindCoordinator's KeyType of a transactional id (Kafka's "
              "``CoordinatorType.TRANSACTION``)."),), classes=(
        Struct("FindCoordinatorRequest", REQUEST, "", doc=(
            "FindCoordinator v4: ``key_type`` 0 = group; ``coordinator_keys`` are group ids."), fields=(
            F("coordinator_keys", default=REQUIRED),
            F("key_type", default=Expr("COORDINATOR_GROUP")),
        )),
        Struct("Coordinator", RESPONSE, "coordinators", fields=(
            F("key"), F("node_id"), F("host"), F("port"), F("error_code", default=0),
            F("error_message", default=None))),
        Struct("FindCoordinatorResponse", RESPONSE, "", fields=(
            F("coordinators"), F("throttle_time_ms", default=0))),
    )),
    Api("OffsetCommit", 8, 8, Kio(8), title="", classes=(
        Struct("OffsetCommitPartition", REQUEST, "topics.partitions", doc=(
            "``committed_leader_epoch``: the leader epoch of the last consumed record (KIP-320), -1 if "
            "unknown."), fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("committed_offset"),
            F("committed_leader_epoch"),
            F("committed_metadata", default=None),
        )),
        Struct("OffsetCommitRequest", REQUEST, "", doc=(
            "OffsetCommit v8 for a consumer using ``assign()`` (generation -1, empty member id)."), fields=(
            F("group_id"),
            F("partitions", "topics.partitions"),
            F("generation_id_or_member_epoch"),
            F("member_id", default=""),
            F("group_instance_id"),
        )),
        Struct("OffsetCommitPartitionResponse", RESPONSE, "topics.partitions", fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("error_code"),
        )),
        Struct("OffsetCommitResponse", RESPONSE, "", fields=(
            F("partitions", "topics.partitions"), F("throttle_time_ms", default=0))),
    )),
    Api("OffsetFetch", 9, 8, Kio(8), title="", classes=(
        Struct("OffsetFetchRequest", REQUEST, "", doc=(
            "OffsetFetch v8 for one group; ``partitions`` None asks for every committed partition."), fields=(
            F("group_id", "groups.group_id", type="str"),  # the one group of Groups
            # (topic, partition) pairs of the one group
            F("partitions", "groups.topics.partition_indexes", type="tuple[tuple[str, int], ...] | None"),
            F("require_stable"),
        )),
        Struct("OffsetFetchPartition", RESPONSE, "groups.topics.partitions", doc=(
            "``committed_offset`` -1 when nothing is committed."), fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("committed_offset"),
            F("committed_leader_epoch"),
            F("metadata", default=None),
            F("error_code", default=0),
        )),
        Struct("OffsetFetchResponse", RESPONSE, "", fields=(
            F("group_id", "groups.group_id", type="str"),
            F("error_code", "groups.error_code", type="int", default=REQUIRED),
            F("partitions", "groups.topics.partitions"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("InitProducerId", 22, 4, Kio(4), classes=(
        Struct("InitProducerIdRequest", REQUEST, "", doc=(
            "InitProducerId v4 for an idempotent (non-transactional) producer."), fields=(
            F("transactional_id", default=None),
            F("transaction_timeout_ms", default=60000),
            F("producer_id"),
            F("producer_epoch"),
        )),
        Struct("InitProducerIdResponse", RESPONSE, "", fields=(
            F("error_code"), F("producer_id"), F("producer_epoch", default=-1), F("throttle_time_ms", default=0))),
    )),
    Api("JoinGroup", 11, 9, Kio(9), title="classic consumer groups (JoinGroup key 11 ...)", classes=(
        Struct("JoinGroupRequestProtocol", REQUEST, "protocols", doc=(
            "One assignment protocol a member supports: ``name`` (e.g. ``\"range\"``) and its opaque metadata\n"
            "(the client's subscription; the coordinator never decodes it)."), fields=(
            F("name"), F("metadata"))),
        Struct("JoinGroupRequest", REQUEST, "", doc=(
            "JoinGroup v9 (classic group protocol). ``member_id`` \"\" on a first join: the coordinator "
            "answers\nMEMBER_ID_REQUIRED with a new id (KIP-394); ``rebalance_timeout_ms`` -1 means the "
            "session timeout\n(v0 has none)."), fields=(
            F("group_id"),
            F("session_timeout_ms"),
            F("member_id"),
            F("protocol_type"),
            F("protocols"),
            F("rebalance_timeout_ms"),
            F("group_instance_id"),
            F("reason"),
        )),
        Struct("JoinGroupResponseMember", RESPONSE, "members", doc=(
            "A member and the metadata of the group's chosen protocol, sent to the group leader only."), fields=(
            F("member_id"), F("metadata"), F("group_instance_id"))),
        Struct("JoinGroupResponse", RESPONSE, "", fields=(
            F("error_code"),
            F("member_id"),
            F("generation_id"),
            F("protocol_type"),
            F("protocol_name", default=None),
            F("leader", default=""),
            F("members", default=()),
            F("skip_assignment"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("SyncGroup", 14, 5, Kio(5), title="", classes=(
        Struct("SyncGroupRequestAssignment", REQUEST, "assignments", fields=(F("member_id"), F("assignment"))),
        Struct("SyncGroupRequest", REQUEST, "", doc=(
            "SyncGroup v5: the leader sends every member's assignment (computed by the client's assignor);\n"
            "the others send none and wait for theirs."), fields=(
            F("group_id"),
            F("generation_id"),
            F("member_id"),
            F("assignments", default=()),
            F("group_instance_id"),
            F("protocol_type"),
            F("protocol_name"),
        )),
        Struct("SyncGroupResponse", RESPONSE, "", fields=(
            F("error_code"),
            F("assignment", default=b""),
            F("protocol_type"),
            F("protocol_name"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("Heartbeat", 12, 4, Kio(4), title="", classes=(
        Struct("HeartbeatRequest", REQUEST, "", doc=(
            "Heartbeat v4: REBALANCE_IN_PROGRESS tells the member to rejoin."), fields=(
            F("group_id"), F("generation_id"), F("member_id"), F("group_instance_id"))),
        Struct("HeartbeatResponse", RESPONSE, "", fields=(F("error_code"), F("throttle_time_ms", default=0))),
    )),
    Api("LeaveGroup", 13, 5, Kio(5), title="", classes=(
        Struct("MemberIdentity", REQUEST, "members", fields=(
            F("member_id"), F("group_instance_id"), F("reason"))),
        Struct("LeaveGroupRequest", REQUEST, "", doc=(
            "LeaveGroup v5 (v0-v2 carry one ``member_id`` at the top level: one MemberIdentity here)."), fields=(
            F("group_id"), F("members"))),
        Struct("LeaveGroupMemberResponse", RESPONSE, "members", fields=(
            F("member_id"), F("error_code"), F("group_instance_id", default=None))),
        Struct("LeaveGroupResponse", RESPONSE, "", fields=(
            F("error_code"), F("members", default=()), F("throttle_time_ms", default=0))),
    )),
    Api("ListGroups", 16, 5, Kio(5), title=(
        "group admin: ListGroups (16, v5), DescribeGroups (15, v5), DeleteGroups (42, v2), OffsetDelete (47, v0)"),
        classes=(
        Struct("ListGroupsRequest", REQUEST, "", doc=(
            "ListGroups v5: ``states_filter`` (KIP-518, v4+) and ``types_filter`` (KIP-848, v5+); empty: every "
            "group."), fields=(F("states_filter", default=()), F("types_filter", default=()))),
        Struct("ListedGroup", RESPONSE, "groups", doc=(
            "``group_state``: Kafka's state name (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead);\n"
            "``group_type``: ``classic`` (v5+)."), fields=(
            F("group_id"), F("protocol_type"), F("group_state", default=""), F("group_type", default=""))),
        Struct("ListGroupsResponse", RESPONSE, "", fields=(
            F("error_code"), F("groups", default=()), F("throttle_time_ms", default=0))),
    )),
    Api("DescribeGroups", 15, 5, Kio(5), title="", classes=(
        Struct("DescribeGroupsRequest", REQUEST, "", fields=(
            F("groups"), F("include_authorized_operations", default=False))),
        Struct("DescribedGroupMember", RESPONSE, "groups.members", doc=(
            "A member as its coordinator knows it: ``member_metadata`` is its subscription for the group's\n"
            "protocol, ``member_assignment`` what the leader assigned it (both opaque to the coordinator)."),
            fields=(F("member_id"), F("client_id"), F("client_host"), F("member_metadata"), F("member_assignment"),
                    F("group_instance_id", default=None))),
        Struct("DescribedGroup", RESPONSE, "groups", doc=(
            "``protocol_data``: the chosen assignment protocol (``range``...), \"\" while rebalancing;\n"
            "``authorized_operations``: Kafka's -2^31 when not asked for."), fields=(
            F("error_code"), F("group_id"), F("group_state", default=""), F("protocol_type", default=""),
            F("protocol_data", default=""), F("members", default=()),
            F("authorized_operations", default=-2147483648))),
        Struct("DescribeGroupsResponse", RESPONSE, "", fields=(F("groups"), F("throttle_time_ms", default=0))),
    )),
    Api("DeleteGroups", 42, 2, Kio(2), title="", classes=(
        Struct("DeleteGroupsRequest", REQUEST, "", fields=(F("groups_names"),)),
        Struct("DeletableGroupResult", RESPONSE, "results", fields=(F("group_id"), F("error_code"))),
        Struct("DeleteGroupsResponse", RESPONSE, "", fields=(F("results"), F("throttle_time_ms", default=0))),
    )),
    Api("OffsetDelete", 47, 0, Kio(0), title="", classes=(
        Struct("OffsetDeleteRequestPartition", REQUEST, "topics.partitions", fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME), F("partition", "partition_index"))),
        Struct("OffsetDeleteRequest", REQUEST, "", doc=(
            "OffsetDelete v0 (KIP-496): forget a group's committed offsets of these partitions."), fields=(
            F("group_id"), F("partitions", "topics.partitions"))),
        Struct("OffsetDeleteResponsePartition", RESPONSE, "topics.partitions", fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME), F("partition", "partition_index"), F("error_code"))),
        Struct("OffsetDeleteResponse", RESPONSE, "", fields=(
            F("error_code"), F("partitions", "topics.partitions", default=()), F("throttle_time_ms", default=0))),
    )),
)
