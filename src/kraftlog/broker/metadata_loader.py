"""How a broker of the single controller learns metadata (Kafka's ``KafkaRaftClient`` as an observer feeding the
``MetadataLoader``): it keeps a local copy of the ``__cluster_metadata`` log with its own snapshots on its log
directory, restarts from them, fetches from the controller only what it misses, and fetches the controller's
snapshot (FetchSnapshot, KIP-630) when what it misses was cleaned away.

* **At start** the local copy (:class:`~kraftlog.storage.metadata_log.MetadataLog`, not flushed: it is refetched
  when lost) is loaded: its newest readable snapshot, then the records after it, into the image, not published
  (the publisher waits until the broker caught up with the controller's log, as Kafka's MetadataLoader waits for
  the high watermark). A local copy that cannot be loaded (no readable snapshot where the log no longer starts at
  0) is deleted and refetched: it is only a copy.
* **Fetching**: a MetadataFetch from the image's next offset; the records are appended to the local copy, then
  replayed and published. An answer naming a SnapshotId (the fetch offset is below the controller's log start)
  starts FetchSnapshot requests of at most :data:`SNAPSHOT_CHUNK_BYTES` each; the whole snapshot is checked,
  installed (the local log restarts at it) and loaded (:meth:`BrokerMetadataPublisher.load_snapshot`). A
  controller whose log ends before this broker's copy (its metadata directory formatted again) answers
  OFFSET_OUT_OF_RANGE with a high watermark below the fetch offset: the copy is deleted and refetched from 0 and
  nothing is published until the broker caught up again (then the stray rule runs as after a restart).
* **Snapshots**: once published, the broker writes snapshots of its image into its local copy by the
  :class:`~kraftlog.metadata.snapshot.SnapshotGenerator`'s rule, and the copy is cleaned by retention every 60 s,
  as a Kafka broker's metadata log is.
* A local copy that cannot be written (OSError: a full disk) is given up for this run (a line in the node's log):
  the broker keeps serving from memory, and at its next start loads what the copy holds and fetches the rest.
  Kafka halts a broker whose metadata log directory fails; the copy holds nothing that is not at the controller.
"""

from __future__ import annotations

from typing import cast

from ..metadata.image import MetadataImage
from ..metadata.records import MetadataRecord
from ..metadata.snapshot import SnapshotGenerator, SnapshotId, image_from_snapshot, image_records, records_bytes
from ..protocol import messages as m
from ..protocol.errors import Errors, WireError
from ..protocol.wire.snapshots import decode_snapshot
from ..storage.disk import Disk
from ..storage.metadata_log import MetadataLog, MetadataLogConfig, MetadataLogLoadError
from .channel import CONTROLLER, BrokerChannel, FetchSnapshotContext, MetadataFetchContext, Note
from .config import BrokerConfig
from .lifecycle import PENDING_CONTROLLED_SHUTDOWN, BrokerLifecycleManager
from .metadata_cache import MetadataCache
from .metadata_publisher import BrokerMetadataPublisher

__all__ = ["MetadataLoader", "METADATA_FETCH_TIMEOUT_MS", "SNAPSHOT_CHUNK_BYTES"]

#: How long (ms) a fetch of the metadata log may go unanswered (Kafka: controller.quorum.fetch.timeout.ms).
METADATA_FETCH_TIMEOUT_MS = 2000
#: The most bytes one FetchSnapshot asks for (Kafka's fetcher asks ``controller.quorum.fetch.max.bytes``-sized
#: chunks; kraftlog keeps a chunk at 1 MiB).
SNAPSHOT_CHUNK_BYTES = 1 << 20


class MetadataLoader:
    """Fetches the controller's metadata log for broker ``broker_id`` of cluster ``cluster_id`` into its local copy
    on ``disk`` and hands each batch to the ``publisher``, saying whether it reached the log's high watermark
    (module docstring); ``static``: the broker's static configs (the copy's segment, retention and snapshot
    configs); ``note``: a line for the node's log; times in ms."""

    def __init__(self, broker_id: int, cluster_id: str, config: BrokerConfig, cache: MetadataCache,
                 publisher: BrokerMetadataPublisher, lifecycle: BrokerLifecycleManager,
                 channel: BrokerChannel, disk: Disk, static: dict[str, str], note: Note, now_ms: int) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.config = config
        self._cache = cache
        self._publisher = publisher
        self._lifecycle = lifecycle
        self._channel = channel
        self._note = note
        self.next_metadata_fetch_ms: int | None = None
        self.metadata_fetch_inflight = False
        log_config = MetadataLogConfig.from_configs(static)
        self.snapshot_generator = SnapshotGenerator(log_config.max_bytes_between_snapshots,
                                                    log_config.max_snapshot_interval_ms, now_ms)
        #: the snapshot being fetched: (its id, the bytes so far), None when none is
        self.snapshot_fetch: tuple[SnapshotId, bytearray] | None = None
        #: the local copy of the metadata log, None once given up (it could not be written)
        self.local: MetadataLog | None = None
        self._load_local(disk, log_config, now_ms)

    # ------------------------------------------------------------------ the local copy
    def _load_local(self, disk: Disk, log_config: MetadataLogConfig, now_ms: int) -> None:
        """Load the local copy into the image (not published)."""
        try:
            local = MetadataLog(disk, log_config, now_ms, flush=False, serves=False)
            try:
                snapshot, base, records = local.load(now_ms)
            except MetadataLogLoadError as exc:
                self._note(f"the local metadata log cannot be loaded ({exc}): it is deleted and fetched again")
                local.reset(now_ms)
                snapshot, base, records = None, 0, []
        except OSError as exc:
            self._note(f"the local metadata log cannot be read ({exc}): metadata is kept in memory only")
            return
        for line in local.load_problems:
            self._note(f"local metadata log: {line}")
        self.local = local
        if snapshot is not None:
            image, delta = image_from_snapshot(snapshot.records, snapshot.snapshot_id)
            self._publisher.load_snapshot(now_ms, image, delta.errors)
        if records:
            self._publisher.apply_metadata(now_ms, records, base, caught_up=False)

    def _give_up_local(self, exc: OSError, what: str) -> None:
        self._note(f"the local metadata log cannot be written ({what}: {exc}): metadata is kept in memory only "
                   f"until the broker restarts")
        self.local = None

    def _maybe_snapshot(self, num_bytes: int, now_ms: int) -> None:
        """The broker's SnapshotGenerator after records were published (Kafka's broker writes snapshots of its
        published image into its own metadata log)."""
        local = self.local
        if self._publisher.metadata_apply_errors.count:
            self.snapshot_generator.disable("a metadata record was not applied")
        reason = self.snapshot_generator.publish_log_delta(num_bytes, now_ms)
        image = self._cache.image
        if reason is None or local is None or not self._publisher.published or local.end_offset != image.offset + 1:
            return
        try:
            local.create_snapshot(SnapshotId(image.offset + 1, 0), image_records(image), now_ms)
        except OSError as exc:
            self._note(f"metadata snapshot at offset {image.offset + 1} not written: {exc}")

    # ------------------------------------------------------------------ fetching
    def start(self, now_ms: int) -> None:
        """The broker registered: fetch now unless a fetch is in flight."""
        if self.next_metadata_fetch_ms is None:
            self.next_metadata_fetch_ms = now_ms
        if not self.metadata_fetch_inflight:
            self.send_fetch(now_ms)

    def maybe_send(self, now_ms: int) -> None:
        """Fetch if a fetch is due and none is in flight; clean the local copy when its cleaning is due."""
        local = self.local
        if local is not None and len(local.snapshots) >= 2 and now_ms >= local.next_clean_ms:
            try:
                local.clean_due(now_ms)
            except OSError as exc:
                self._note(f"the local metadata log could not be cleaned: {exc}")
        if (self.next_metadata_fetch_ms is not None and now_ms >= self.next_metadata_fetch_ms
                and not self.metadata_fetch_inflight):
            self.send_fetch(now_ms)

    def send_fetch(self, now_ms: int) -> None:
        """Fetch the metadata log from the image's next offset, or the next chunk of the snapshot being fetched
        (nothing before registration)."""
        broker_epoch = self._lifecycle.broker_epoch
        if broker_epoch < 0:  # unregistered: nothing to send; registration starts the fetches again
            self.next_metadata_fetch_ms = None
            return
        self.metadata_fetch_inflight = True
        self.next_metadata_fetch_ms = None
        if self.snapshot_fetch is not None:
            sid, data = self.snapshot_fetch
            self._channel.send_request(CONTROLLER, m.FetchSnapshotRequest(
                current_leader_epoch=-1, snapshot_end_offset=sid.end_offset, snapshot_epoch=sid.epoch,
                position=len(data), cluster_id=self.cluster_id, replica_id=self.broker_id,
                max_bytes=SNAPSHOT_CHUNK_BYTES), now_ms, METADATA_FETCH_TIMEOUT_MS,
                FetchSnapshotContext(sid.end_offset, sid.epoch, len(data)))
            return
        self._channel.send_request(CONTROLLER, m.MetadataFetchRequest(
            self.broker_id, broker_epoch, self._cache.image.offset + 1, self.config.metadata_idle_ms,
            self.cluster_id), now_ms, METADATA_FETCH_TIMEOUT_MS, MetadataFetchContext())

    def _again(self, now_ms: int, backoff: bool = False) -> None:
        self.metadata_fetch_inflight = False
        if backoff:
            self.next_metadata_fetch_ms = now_ms + self.config.fetch_backoff_ms
            return
        self.next_metadata_fetch_ms = now_ms
        if self._lifecycle.state == PENDING_CONTROLLED_SHUTDOWN:
            self._lifecycle.next_heartbeat_ms = now_ms
        self.send_fetch(now_ms)

    def on_fetch(self, now_ms: int, resp: m.MetadataFetchResponse) -> None:
        """Keep and publish the records that follow the image, or start fetching the snapshot the controller
        names, then fetch again (long-polled by the controller)."""
        fetch_offset = self._cache.image.offset + 1
        if resp.error_code == Errors.OFFSET_OUT_OF_RANGE and 0 <= resp.high_watermark < fetch_offset:
            self._refetch_from_start(now_ms, resp.high_watermark)
            self._again(now_ms)
            return
        if resp.error_code != Errors.NONE:
            self._again(now_ms, backoff=True)
            return
        if resp.snapshot_end_offset >= 0:
            self.snapshot_fetch = (SnapshotId(resp.snapshot_end_offset, resp.snapshot_epoch), bytearray())
        elif resp.records and resp.base_offset == fetch_offset:
            records = resp.records
            if self.local is not None and self.local.end_offset == resp.base_offset:
                try:
                    self.local.append(records, now_ms)
                except OSError as exc:
                    self._give_up_local(exc, f"appending {len(records)} records at offset {resp.base_offset}")
            self._publisher.apply_metadata(now_ms, records, resp.base_offset,
                                           caught_up=resp.base_offset + len(records) >= resp.high_watermark)
            self._maybe_snapshot(records_bytes(records), now_ms)
        self._again(now_ms)

    def _refetch_from_start(self, now_ms: int, controller_end: int) -> None:
        """The controller's log ends (``controller_end``) before this broker's copy: it is not the log the copy
        came from (the controller's directory was formatted again). Delete the copy and refetch from offset 0."""
        self._note(f"the controller's metadata log ends at offset {controller_end}, below this broker's "
                   f"({self._cache.image.offset + 1}): the local metadata log is deleted and fetched again from 0")
        if self.local is not None:
            try:
                self.local.reset(now_ms)
            except OSError as exc:
                self._give_up_local(exc, "deleting it")
        self._publisher.unpublish()
        self._publisher.load_snapshot(now_ms, MetadataImage())
        self.snapshot_generator.publish_snapshot(now_ms)

    def on_fetch_snapshot(self, now_ms: int, context: FetchSnapshotContext, resp: m.FetchSnapshotResponse) -> None:
        """A chunk of the snapshot being fetched (Kafka's ``handleFetchSnapshotResponse``): appended when it is the
        one asked for; once the snapshot is whole it is checked, installed in the local copy and loaded. Any error
        (SNAPSHOT_NOT_FOUND: cleaned meanwhile) drops it: the next metadata fetch names the latest one."""
        current = self.snapshot_fetch
        sid = SnapshotId(context.end_offset, context.epoch)
        if current is None or current[0] != sid or len(current[1]) != context.position:
            self._again(now_ms)
            return
        if (resp.error_code != Errors.NONE or resp.partition_error_code != Errors.NONE
                or (resp.snapshot_end_offset, resp.snapshot_epoch) != (sid.end_offset, sid.epoch)
                or resp.position != context.position or resp.size <= 0 or not resp.unaligned_records
                or context.position + len(resp.unaligned_records) > resp.size):
            self.snapshot_fetch = None
            self._again(now_ms, backoff=resp.partition_error_code != Errors.SNAPSHOT_NOT_FOUND)
            return
        data = current[1]
        data += resp.unaligned_records
        if len(data) == resp.size:
            self.snapshot_fetch = None
            self._install(now_ms, sid, bytes(data))
        self._again(now_ms)

    def _install(self, now_ms: int, sid: SnapshotId, data: bytes) -> None:
        """A whole fetched snapshot: written into the local copy (which restarts at it) and loaded as the image."""
        try:
            if self.local is not None:
                try:
                    records = self.local.install_snapshot(sid, data, now_ms).records
                except OSError as exc:
                    self._give_up_local(exc, f"installing snapshot {sid.file_name()}")
                    records = decode_snapshot(data)[0]
            else:
                records = decode_snapshot(data)[0]
        except WireError as exc:
            self._note(f"fetched metadata snapshot {sid.file_name()} does not decode ({exc}): fetched again")
            return
        image, delta = image_from_snapshot(cast(list[MetadataRecord], records), sid)
        self._note(f"loaded metadata snapshot {sid.file_name()} from the controller")
        self._publisher.load_snapshot(now_ms, image, delta.errors)
        self.snapshot_generator.publish_snapshot(now_ms)

    def on_timeout(self, now_ms: int) -> None:
        """A fetch went unanswered: fetch again after a tenth of ``replica.fetch.backoff.ms`` (a snapshot being
        fetched goes on from where it was)."""
        self.metadata_fetch_inflight = False
        self.next_metadata_fetch_ms = now_ms + self.config.fetch_backoff_ms // 10

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d``, the next fetch's time and the local copy's next cleaning (ms; once it has two
        snapshots, the least a cleaning needs)."""
        if (self.next_metadata_fetch_ms is not None and not self.metadata_fetch_inflight
                and self.next_metadata_fetch_ms < d):
            d = self.next_metadata_fetch_ms
        local = self.local
        if local is not None and len(local.snapshots) >= 2 and local.next_clean_ms < d:
            d = local.next_clean_ms
        return d
