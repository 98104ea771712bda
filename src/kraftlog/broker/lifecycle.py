"""Kafka's ``BrokerLifecycleManager``: registration with the controller, heartbeats, the broker's states and
the controlled shutdown.

Lifecycle (KRaft): register with the controller (BrokerRegistration, retried while the controller answers
an error such as DUPLICATE_BROKER_REGISTRATION), heartbeat every ``broker.heartbeat.interval.ms``; the broker
epoch is the one the registration returns; STARTING → RECOVERY once registered → RUNNING once a heartbeat
says it is unfenced; on a controlled shutdown, heartbeats ask to shut down until the controller grants it.
A heartbeat answered STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED makes the broker register again.

KIP-858: after a log directory failure every heartbeat names the directory offline, and the broker must
stop when no heartbeat was answered within ``log.dir.failure.timeout.ms`` (:attr:`log_dir_failure_deadline_ms`).
"""

from __future__ import annotations

import uuid

from ..level import Level
from ..protocol import messages as m
from ..protocol.errors import Errors
from .channel import CONTROLLER, BrokerChannel, HeartbeatContext, Note, RegisterContext
from .config import BrokerConfig
from .log_manager import LogManager
from .metadata_cache import MetadataCache

#: Backoff (ms) before a registration is retried.
REGISTRATION_BACKOFF_MS = 1000
#: How long (ms) a controlled shutdown may wait for the controller before the broker stops anyway.
CONTROLLED_SHUTDOWN_MAX_MS = 30000

STARTING, RECOVERY, RUNNING, PENDING_CONTROLLED_SHUTDOWN, SHUTDOWN = (
    "STARTING", "RECOVERY", "RUNNING", "PENDING_CONTROLLED_SHUTDOWN", "SHUTDOWN")


class BrokerLifecycleManager:
    """Broker ``broker_id``'s registration (incarnation ``incarnation_id``, cluster ``cluster_id``) and
    heartbeats, sent through ``channel``; times in ms. ``state``: one of STARTING, RECOVERY, RUNNING,
    PENDING_CONTROLLED_SHUTDOWN, SHUTDOWN; ``broker_epoch``: -1 while not registered."""

    def __init__(self, broker_id: int, cluster_id: str, incarnation_id: uuid.UUID, level: Level,
                 config: BrokerConfig, channel: BrokerChannel, cache: MetadataCache, logs: LogManager,
                 note: Note, now_ms: int) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.incarnation_id = incarnation_id
        self.level = level
        self.config = config
        self._channel = channel
        self._cache = cache
        self._logs = logs
        self._note = note
        self.state = STARTING
        self.broker_epoch = -1
        self.fenced = True
        self.next_register_ms: int | None = now_ms
        self.registration_inflight = False
        self.next_heartbeat_ms: int | None = None
        self.heartbeat_inflight = False
        self.controlled_shutdown_deadline: int | None = None
        #: When the controller must have acknowledged the failed log directory by (a heartbeat answered):
        #: else the broker stops (KIP-858).
        self.log_dir_failure_deadline_ms: int | None = None

    # ================================================================= sending
    def maybe_send(self, now_ms: int) -> None:
        """Send the registration and the heartbeat if due."""
        if self.next_register_ms is not None and now_ms >= self.next_register_ms and not self.registration_inflight:
            self.next_register_ms = None
            self.registration_inflight = True
            self._channel.send_request(CONTROLLER, m.BrokerRegistrationRequest(
                self.broker_id, self.cluster_id, self.incarnation_id,
                previous_broker_epoch=self._logs.previous_broker_epoch if self.level >= Level.ELR else -1,
                listeners=self.config.advertised_listeners, log_dirs=(self._logs.directory_id,)),
                now_ms, self.config.request_timeout_ms, RegisterContext())
        if self.next_heartbeat_ms is not None and now_ms >= self.next_heartbeat_ms:
            self.send_heartbeat(now_ms)

    def send_heartbeat(self, now_ms: int) -> None:
        """A BrokerHeartbeat now (none before registration), naming the offline log directory (KIP-858)."""
        self.next_heartbeat_ms = now_ms + self.config.heartbeat_interval_ms
        if self.broker_epoch < 0:
            return
        self.heartbeat_inflight = True
        offline = (self._logs.directory_id,) if self._logs.offline else ()
        self._channel.send_request(CONTROLLER, m.BrokerHeartbeatRequest(
            self.broker_id, self.broker_epoch, self._cache.image.offset, want_fence=False,
            want_shut_down=self.state == PENDING_CONTROLLED_SHUTDOWN, offline_log_dirs=offline),
            now_ms, self.config.heartbeat_interval_ms, HeartbeatContext(bool(offline)))

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d`` and this manager's timers (ms)."""
        if self.log_dir_failure_deadline_ms is not None and self.log_dir_failure_deadline_ms < d:
            d = self.log_dir_failure_deadline_ms
        if self.next_register_ms is not None and not self.registration_inflight and self.next_register_ms < d:
            d = self.next_register_ms
        if self.next_heartbeat_ms is not None and self.next_heartbeat_ms < d:
            d = self.next_heartbeat_ms
        if self.controlled_shutdown_deadline is not None and self.controlled_shutdown_deadline < d:
            d = self.controlled_shutdown_deadline
        return d

    # ================================================================= answers
    def on_registration(self, now_ms: int, resp: m.BrokerRegistrationResponse) -> bool:
        """Take the broker epoch of a successful registration and heartbeat at once; True then (the broker
        starts fetching), False after an error (retried after REGISTRATION_BACKOFF_MS)."""
        self.registration_inflight = False
        if resp.error_code != Errors.NONE:
            self.next_register_ms = now_ms + REGISTRATION_BACKOFF_MS
            return False
        self.broker_epoch = resp.broker_epoch
        if self.state == STARTING:
            self.state = RECOVERY
        self.next_heartbeat_ms = now_ms
        return True

    def on_heartbeat(self, now_ms: int, context: HeartbeatContext, resp: m.BrokerHeartbeatResponse) -> bool:
        """Apply a heartbeat's answer; True when it grants the controlled shutdown (the broker stops)."""
        self.heartbeat_inflight = False
        if (resp.error_code == Errors.NONE and context.reports_offline_dir
                and self.log_dir_failure_deadline_ms is not None):
            # KIP-858: a heartbeat carrying the offline directory was answered: the controller knows.
            self.log_dir_failure_deadline_ms = None
            self._note(f"the controller acknowledged the offline log directory {self._logs.directory_id}")
        if resp.error_code in (Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED):
            if not self.registration_inflight and self.state != PENDING_CONTROLLED_SHUTDOWN:
                self.broker_epoch = -1
                self.next_heartbeat_ms = None
                self.next_register_ms = now_ms
            return False
        if resp.error_code != Errors.NONE:
            return False
        self.fenced = resp.is_fenced
        if self.state == RECOVERY and not resp.is_fenced:
            self.state = RUNNING
        if self.state == PENDING_CONTROLLED_SHUTDOWN:
            if resp.should_shut_down:
                return True
            assert self.next_heartbeat_ms is not None  # set by the heartbeat just answered
            self.next_heartbeat_ms = min(self.next_heartbeat_ms, now_ms + 100)
        return False

    def on_registration_timeout(self, now_ms: int) -> None:
        """The registration went unanswered: retry after REGISTRATION_BACKOFF_MS."""
        self.registration_inflight = False
        self.next_register_ms = now_ms + REGISTRATION_BACKOFF_MS

    # ================================================================= shutdown and failure
    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """Ask the controller, with the next heartbeat (now), to move leadership away; the broker stops when
        it is granted or after CONTROLLED_SHUTDOWN_MAX_MS."""
        self.state = PENDING_CONTROLLED_SHUTDOWN
        self.controlled_shutdown_deadline = now_ms + CONTROLLED_SHUTDOWN_MAX_MS
        self.next_heartbeat_ms = now_ms

    def report_offline_log_dir(self, now_ms: int) -> None:
        """The log directory just failed: heartbeat at once (Kafka's ``propagateDirectoryFailure``) and expect
        an answer within ``log.dir.failure.timeout.ms``."""
        self.log_dir_failure_deadline_ms = now_ms + self.config.log_dir_failure_timeout_ms
        if self.broker_epoch >= 0:
            self.next_heartbeat_ms = now_ms
