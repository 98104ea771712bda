"""The result of running a scenario, whichever driver ran it (the simulator, :mod:`kraftlog.sim.runner`, or
real processes, :mod:`kraftlog.net.real_scenario`): the verdict (:class:`kraftlog.verdict.Verdict`), the
readable timeline and the same story as data (:data:`EVENT_KINDS`)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["EVENT_KINDS", "Event", "RunResult"]

#: The kinds of ``RunResult.events``. Every event is a JSON-serialisable dict ``{"t": ms, "kind": str,
#: ...fields}``; ``t`` is the simulated time in ms since the cluster was ready (negative during the
#: bootstrap), the very number its timeline line shows. Fields, by kind:
#:
#: * ``ready``: ``brokers`` (count), ``level`` (label), ``seed``.
#: * ``partition`` (a metadata record the controller committed; ``partition`` is ``"<topic>-<index>"``):
#:
#:   - PartitionRecord: ``created`` True, ``replicas``, ``leader`` (broker id, None for none),
#:     ``leader_epoch``, ``isr``;
#:   - PartitionChangeRecord: only what the record changed is present — ``leader`` (None for none, -1),
#:     ``isr``, ``elr``, ``last_known_elr`` (lists of broker ids), ``last_known_leader`` (None for none),
#:     ``leader_recovery_state`` (``"RECOVERING"``/``"RECOVERED"``) — so ``"leader" in event`` tells a
#:     leader change from none; ``leader_epoch`` (the controller's leader epoch for the partition after the
#:     batch, the number the line shows beside ``leader ->``) is always there.
#: * ``broker``: ``broker`` (id), and ``registered`` True with ``broker_epoch`` (RegisterBrokerRecord), or
#:   ``broker_epoch`` with ``fenced`` (bool) and/or ``in_controlled_shutdown`` (True) when the
#:   BrokerRegistrationChangeRecord set them, ``log_dir_offline`` (True: its log directory was reported
#:   offline, KIP-858) (absent: unchanged).
#: * ``step`` (:func:`kraftlog.scenario.interpreter.step_event`): ``index`` (1-based), ``verb``, the step's
#:   arguments (``Step.args``, SCENARIOS.md): ``broker`` (``node`` ``"controller"`` for the controller's
#:   crash, restart, pause or resume), ``lose``, ``nodes``, ``groups``, ``from``, ``to``, ``api``, ``topic``,
#:   ``partition``, ``count``, ``acks``, ``timeout_ms``, ``config``, ``type``, ``leader``, ``condition``
#:   (:func:`~kraftlog.scenario.interpreter.condition_data`); None means all links (heal ``nodes``), every
#:   API (``api``), any node
#:   (hold/release ``from``/``to``), the cluster (alter_config ``topic``). Then the outcome the line
#:   states: ``acked`` (produce: records acknowledged), ``error`` (alter_config, elect: Kafka's error name,
#:   ``NONE`` on success), ``holds`` (wait_until, expect; when False also ``observed``, and for wait_until
#:   ``timed_out`` True), ``refused`` (restart, restart_controller: the node refused to start on its disk,
#:   the one-line reason; it stays down), ``done`` False (a pause, resume or corrupt refused: a failed
#:   expectation; corrupt: also when no batch was there; True with ``base_offset``/``last_offset``). A step is
#:   recorded when its line is logged, at its end. A ``shutdown`` is recorded once: ``t`` is when the broker
#:   stopped (or was stopped after SHUTDOWN_WAIT_MS), and ``started_t`` (ms, same clock) when its controlled
#:   shutdown began — from then on it hands its leaderships over and is leaving, so the report draws it down from
#:   ``started_t``. ``run_for`` logs no line and records no event.
#: * ``recovery`` (level urm, an unclean recovery's step): ``partition``, ``step`` (started, queried,
#:   answered, rejected, failed, elected, abandoned), ``detail`` (text).
#: * ``invariant``: ``name`` (the invariant, e.g. ``LeaderHasCompleteCommittedLog``), ``key`` (what the
#:   finding is deduplicated on), ``message`` (as the line shows it, with where the run was).
#: * ``truncation`` (a consumer detected a log truncation, KIP-320): ``consumer``, ``partition``,
#:   ``position``, ``divergence_offset`` (offsets), ``reset`` (``auto.offset.reset``; ``"none"`` raised
#:   LogTruncationError).
#: * ``alter_partition_error``: ``broker`` (the leader answered), ``error`` (top-level, when not NONE),
#:   ``partition_errors`` (``{partition: error name}``).
#: * ``described`` (end of the run, DescribeTopicPartitions from a live broker): ``broker``, and either
#:   ``error`` or ``partition``, ``leader`` (None for none), ``leader_epoch``, ``isr``, ``elr``,
#:   ``last_known_elr``, ``offline``.
#: * ``storage`` (a broker's storage fault: its log directory failed, data dropped at load, it stopped
#:   because the failure was not acknowledged): ``broker``, ``detail`` (text).
#: One event of ``RunResult.events`` (``t`` is added when it is recorded).
Event = dict[str, object]

EVENT_KINDS = ("ready", "partition", "broker", "step", "recovery", "invariant", "truncation",
               "alter_partition_error", "described", "storage")


@dataclass
class RunResult:
    """The verdict (SCENARIOS.md's JSON object), the readable timeline, the exit code (0 or 1) and the
    timeline's events as data (:data:`EVENT_KINDS`)."""

    verdict: dict[str, object]
    timeline: list[str] = field(default_factory=list)
    exit_code: int = 0
    wall_ms: float = 0.0
    messages: int = 0
    #: Simulated ms, summed over partitions, during which a partition had no leader (after t0).
    unavailable_ms: int = 0
    #: The run's events ({"t": ms since the cluster was ready, "kind": ..., ...}), one per timeline line
    #: that tells the story, in timeline order (:data:`EVENT_KINDS`).
    events: list[Event] = field(default_factory=list)
