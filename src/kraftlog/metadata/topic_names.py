"""Kafka's topic-name rules (``org.apache.kafka.common.internals.Topic``): which names are legal, which
are internal, which collide. The metadata image refuses a TopicRecord with an illegal name, and a broker
answers a request naming one with INVALID_TOPIC_EXCEPTION (:mod:`kraftlog.protocol.validation`)."""

from __future__ import annotations

import re

__all__ = [
    "CLUSTER_METADATA_TOPIC", "INTERNAL_TOPICS", "MAX_TOPIC_NAME_LENGTH", "validate_topic_name", "is_internal",
    "has_collision_chars", "unify_collision_chars",
]

#: Kafka's ``Topic.CLUSTER_METADATA_TOPIC_NAME``: the KRaft metadata log, never a user topic.
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: Kafka's ``Topic.INTERNAL_TOPICS``: clients may not produce to them (INVALID_TOPIC_EXCEPTION).
INTERNAL_TOPICS = frozenset(("__consumer_offsets", "__transaction_state", "__share_group_state"))
#: Kafka's ``Topic.MAX_NAME_LENGTH`` (a topic's partition directories carry the name plus ``-<n>``).
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: object) -> str | None:
    """Kafka's ``Topic.validate``: None for a legal topic name, else its INVALID_TOPIC_EXCEPTION message,
    e.g. ``Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics,
    '.', '_' and '-'``. Legal: 1 to 249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not isinstance(name, str):
        return f"Topic name is invalid: {name!r} is not a string"
    if not name:
        reason = "the empty string is not allowed"
    elif name == ".":
        reason = "'.' is not allowed"
    elif name == "..":
        reason = "'..' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return f"Topic name is invalid: {reason}"


def is_internal(topic: str) -> bool:
    """Kafka's ``Topic.isInternal``."""
    return topic in INTERNAL_TOPICS


def has_collision_chars(topic: str) -> bool:
    """Kafka's ``Topic.hasCollisionChars``: '.' and '_' collide in metric names."""
    return "_" in topic or "." in topic


def unify_collision_chars(topic: str) -> str:
    """Kafka's ``Topic.unifyCollisionChars``: the name with every '.' as '_'."""
    return topic.replace(".", "_")
