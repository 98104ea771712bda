"""kio-style schemas of the group coordinator's ``__consumer_offsets`` records (Kafka's
``group-coordinator/src/main/resources/common/message/*.json``; kio 0.6.5 has none of them), at the versions
Kafka writes with the classic protocol: OffsetCommitKey v1, OffsetCommitValue v3, GroupMetadataKey v2,
GroupMetadataValue v3. Each record key and value is its schema's bytes after an int16 version prefix;
:mod:`kraftlog.broker.group_records` encodes and decodes them with kio's ``entity_writer`` /
``entity_reader``."""
