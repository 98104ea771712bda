"""Kafka's ``ClusterControlManager`` with its ``BrokerHeartbeatManager``: broker registration and broker
epochs, heartbeats, sessions and fencing, controlled shutdown.

* BrokerRegistration: the broker epoch is the offset of the RegisterBrokerRecord; another incarnation
  while the old one's session is still valid is DUPLICATE_BROKER_REGISTRATION; a new incarnation's
  previous one is handled as a shutdown (KIP-966: unclean when PreviousBrokerEpoch is not the registered
  epoch).
* BrokerHeartbeat: unfence once caught up with the metadata log, fence after ``broker.session.timeout.ms``
  without a heartbeat, controlled shutdown; at level ``urm`` every heartbeat, registration and unfencing
  reconsiders the unclean recoveries (KIP-966).

The session state (last heartbeat, reported metadata offset, controlled-shutdown offset) is in memory:
lost on failover, when the new controller gives every registered broker a fresh session, as Kafka's
does. The partition changes a broker's state change brings are the replication control's
(:class:`~.replication_control.ReplicationControlManager`, ``handleBroker*`` as in Kafka).
"""

from __future__ import annotations

from ..level import Level
from ..metadata.records import RegisterBrokerRecord
from ..protocol import messages as m
from ..protocol.errors import Errors
from .configuration_control import ConfigurationControlManager
from .context import ControllerContext, MetadataRecord
from .replication_control import ReplicationControlManager
from .unclean_recovery import UncleanRecoveryManager


def _listener_strings(req: m.BrokerRegistrationRequest) -> tuple[str, ...]:
    """The request's listeners as Kafka's ``NAME://host:port`` strings, in the order sent."""
    return tuple(f"{lst.name}://{lst.host}:{lst.port}" for lst in req.listeners)


class ClusterControlManager:
    """The controller's cluster control (module docstring). ``ctx``: the controller (image, append, its
    requests); ``replication``: the partition changes of a broker's state change and the unclean
    recoveries; ``urm``: KIP-966's Unclean Recovery Manager; ``now_ms``: when the controller started (every
    registered broker's session starts then); ``cluster_id``: a registration carrying another gets
    INCONSISTENT_CLUSTER_ID."""

    def __init__(self, ctx: ControllerContext, level: Level, configs: ConfigurationControlManager,
                 replication: ReplicationControlManager, urm: UncleanRecoveryManager, now_ms: int,
                 cluster_id: str) -> None:
        self.ctx = ctx
        self.level = level
        self.configs = configs
        self.replication = replication
        self.urm = urm
        self.cluster_id = cluster_id
        self.session_timeout_ms = configs.lookup_static("broker.session.timeout.ms")
        # In-memory broker state (lost on failover; Kafka's BrokerHeartbeatManager).
        self.last_heartbeat_ms: dict[int, int] = {b: now_ms for b in ctx.image.brokers}
        self.controlled_shutdown_offset: dict[int, int] = {}
        #: The metadata offset each broker reported in its last heartbeat (Kafka's BrokerHeartbeatState).
        self.broker_metadata_offset: dict[int, int] = {}

    # ================================================================= sessions
    def next_deadline(self) -> int | None:
        """When the first unfenced broker's session expires (ms), None when every broker is fenced."""
        session = None
        for b, reg in self.ctx.image.brokers.items():
            if not reg.fenced:
                t = self.last_heartbeat_ms.get(b, 0) + self.session_timeout_ms
                session = t if session is None or t < session else session
        return session

    def fence_expired_sessions(self, now_ms: int) -> None:
        """Fence every unfenced broker without a heartbeat for ``broker.session.timeout.ms``, in id order
        (Kafka's ``maybeFenceOneStaleBroker``)."""
        for b in sorted(self.ctx.image.brokers):
            reg = self.ctx.image.brokers[b]
            if not reg.fenced and now_ms - self.last_heartbeat_ms.get(b, now_ms) >= self.session_timeout_ms:
                self.ctx.append(self.replication.handle_broker_fenced(b, reg.broker_epoch), now_ms)

    def lowest_active_offset(self) -> int:
        """The lowest metadata offset reported by an active broker (unfenced, not in controlled shutdown),
        or a huge number when there is none (Kafka's ``BrokerHeartbeatManager.lowestActiveOffset``)."""
        image = self.ctx.image
        offsets = [self.broker_metadata_offset.get(b, -1) for b in sorted(image.brokers) if image.is_active(b)]
        return min(offsets) if offsets else 2**63 - 1

    def _reask(self, now_ms: int, broker: int, reason: str) -> None:
        """Drop ``broker``'s outstanding GetReplicaLogInfo, if any, and ask it again at once (issue 25,
        rule 3); an answer to the dropped request is not read."""
        corr = self.urm.reask(now_ms, broker, reason)
        if corr is not None:
            self.ctx.cancel_request(corr)

    # ================================================================= BrokerRegistration
    def handle_registration(self, now_ms: int, req: m.BrokerRegistrationRequest) -> m.BrokerRegistrationResponse:
        """Kafka's ``ClusterControlManager.registerBroker``.

        * Another incarnation while the old one's session is still valid → DUPLICATE_BROKER_REGISTRATION.
        * The *same* incarnation id as the registered one is an amendment (a retry whose first response
          was lost): the RegisterBrokerRecord keeps the broker epoch and the fencing/shutdown state, and
          no shutdown handling runs.
        * A new incarnation gets a new broker epoch (the record's offset) and the previous incarnation's
          shutdown is handled (``BrokerShutdownHandler``): level ``elr``+ with PreviousBrokerEpoch different
          from the stored epoch is an unclean shutdown (KIP-966: the broker leaves every ISR and ELR, its
          ELR memberships go to LastKnownELR); otherwise it is handled as a fencing.

        First of all, a ClusterId other than the controller's → INCONSISTENT_CLUSTER_ID, nothing written."""
        if req.cluster_id != self.cluster_id:
            return m.BrokerRegistrationResponse(Errors.INCONSISTENT_CLUSTER_ID)
        old = self.ctx.image.brokers.get(req.broker_id)
        if old is not None and old.incarnation_id == req.incarnation_id:
            self.ctx.append([RegisterBrokerRecord(
                broker_id=req.broker_id, incarnation_id=req.incarnation_id, broker_epoch=old.broker_epoch,
                rack=req.rack, fenced=old.fenced, in_controlled_shutdown=old.in_controlled_shutdown,
                previous_broker_epoch=req.previous_broker_epoch, listeners=_listener_strings(req),
                log_dirs=tuple(req.log_dirs) or None)], now_ms)
            self.last_heartbeat_ms[req.broker_id] = now_ms
            return m.BrokerRegistrationResponse(Errors.NONE, broker_epoch=old.broker_epoch)
        records: list[MetadataRecord] = []
        if old is not None:
            if not old.fenced and now_ms - self.last_heartbeat_ms.get(req.broker_id, -10**12) < self.session_timeout_ms:
                # Kafka: another incarnation still holds a valid session.
                if self.urm.tasks:  # ... but the process that answered GetReplicaLogInfo is gone
                    self.urm.forget_answers(now_ms, req.broker_id, "a new incarnation is registering")
                return m.BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION)
            clean = self.level < Level.ELR or req.previous_broker_epoch == old.broker_epoch
            if not old.fenced:
                records += self.replication.handle_broker_fenced(req.broker_id, old.broker_epoch)
            if not clean:
                records += self.replication.handle_broker_shutdown(req.broker_id, records)
        epoch = self.ctx.end_offset + len(records)
        records.append(RegisterBrokerRecord(
            broker_id=req.broker_id, incarnation_id=req.incarnation_id, broker_epoch=epoch,
            rack=req.rack, fenced=True, in_controlled_shutdown=False,
            previous_broker_epoch=req.previous_broker_epoch, listeners=_listener_strings(req),
            log_dirs=tuple(req.log_dirs) or None))
        self.ctx.append(records, now_ms)
        self.last_heartbeat_ms[req.broker_id] = now_ms
        self.controlled_shutdown_offset.pop(req.broker_id, None)
        self.broker_metadata_offset.pop(req.broker_id, None)
        if self.urm.tasks:
            # The new broker epoch makes this broker's earlier answers stale, and a question to the
            # previous incarnation will not be answered: ask it again at once.
            self._reask(now_ms, req.broker_id, "registered again")
            self.urm.retry_failed(req.broker_id)
            self.replication.consider_recoveries(now_ms)
        return m.BrokerRegistrationResponse(Errors.NONE, broker_epoch=epoch)

    # ================================================================= BrokerHeartbeat
    def handle_heartbeat(self, now_ms: int, req: m.BrokerHeartbeatRequest) -> m.BrokerHeartbeatResponse:
        """Kafka's ``BrokerHeartbeatManager.calculateNextBrokerState`` and
        ``ReplicationControlManager.processBrokerHeartbeat``:

        * fenced: a shutdown request is granted at once; otherwise unfence once the broker's metadata
          offset reached its RegisterBrokerRecord, and elect leaderless partitions (``handleBrokerUnfenced``);
        * unfenced, wanting to shut down: with no leaderships, fenced and granted at once; else enter
          controlled shutdown (leave every ISR, move leaderships: ``handleBrokerInControlledShutdown``);
        * in controlled shutdown: granted (and fenced) once it leads nothing and every active broker
          (unfenced, not shutting down) reported a metadata offset at or past the controlled shutdown
          offset (``lowestActiveOffset``)."""
        image = self.ctx.image
        reg = image.brokers.get(req.broker_id)
        if reg is None:
            return m.BrokerHeartbeatResponse(Errors.BROKER_ID_NOT_REGISTERED)
        if reg.broker_epoch != req.broker_epoch:
            return m.BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH)
        b = req.broker_id
        self.last_heartbeat_ms[b] = now_ms
        self.broker_metadata_offset[b] = req.current_metadata_offset
        replication = self.replication
        if req.offline_log_dirs:
            # KIP-858 (handleDirectoriesOffline). Kafka runs it after the state change, but a Kafka broker
            # never registers a failed directory as online; a kraftlog broker registers its one directory
            # and reports it offline in its first heartbeat, so it is applied first: an unfencing in the same
            # heartbeat must not make the broker a leader.
            self.ctx.append(replication.handle_directories_offline(b, req.offline_log_dirs), now_ms)
            reg = self.ctx.image.brokers[b]
        caught_up = req.current_metadata_offset >= reg.broker_epoch
        should_shut_down = False
        was_fenced = reg.fenced
        if reg.fenced:
            if req.want_shut_down:
                should_shut_down = True
            elif not req.want_fence and caught_up:
                self.ctx.append(replication.handle_broker_unfenced(b, reg.broker_epoch), now_ms)
        elif not reg.in_controlled_shutdown:
            if req.want_fence or (req.want_shut_down and not replication.has_leaderships(b)):
                self.ctx.append(replication.handle_broker_fenced(b, reg.broker_epoch), now_ms)
                should_shut_down = req.want_shut_down
            elif req.want_shut_down:
                self.ctx.append(replication.handle_broker_in_controlled_shutdown(b, reg.broker_epoch), now_ms)
                self.controlled_shutdown_offset[b] = self.ctx.end_offset - 1
        elif (not replication.has_leaderships(b)
              and self.controlled_shutdown_offset.get(b, -1) <= self.lowest_active_offset()):
            # SHUTDOWN_NOW: the broker is fenced as it leaves (handleBrokerFenced).
            self.ctx.append(replication.handle_broker_fenced(b, reg.broker_epoch, in_controlled_shutdown=False),
                            now_ms)
            should_shut_down = True
        reg = self.ctx.image.brokers[b]
        if self.configs.unclean_recovery_enabled or self.urm.tasks:
            # KIP-966: recovery is reconsidered on every heartbeat (and so on every unfencing); a
            # request to this broker that failed is sent again, and one still outstanding is sent again
            # at once when the broker was just unfenced or the question is overdue (issue 25, rule 3).
            if was_fenced and not reg.fenced:
                self._reask(now_ms, b, "is unfenced")
            elif self.urm.question_overdue(now_ms, b):
                self._reask(now_ms, b, "heartbeated after its question's timeout")
            self.urm.retry_failed(b)
            replication.consider_recoveries(now_ms)
        return m.BrokerHeartbeatResponse(Errors.NONE, is_caught_up=caught_up, is_fenced=reg.fenced,
                                         should_shut_down=should_shut_down)
