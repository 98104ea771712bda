"""Issue 29: each node's metrics under Kafka's names, one code path for the simulator and real nodes.

* names render to Prometheus as jmx_exporter's ``examples/kafka-kraft-3_0_0.yml`` renders Kafka's MBeans;
* the simulator's nodes count what happened (elections by kind, records in, ISR changes, requests) and
  their gauges read the state (checked against the run's own verdict and the nodes' state);
* ``/metrics``'s exposition parses and names each family by its MBean.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import SCENARIO_DIR
from kraftlog.broker import metrics as bm
from kraftlog.controller import metrics as cm
from kraftlog.level import Level
from kraftlog.metrics import RESERVOIR_SIZE, Histogram, KafkaMetrics, MetricName
from kraftlog.net.metrics_http import exposition, key_gauges
from kraftlog.scenario import load_scenario
from kraftlog.sim.runner import ScenarioRun


@pytest.mark.parametrize("name, expected", [
    (MetricName("kafka.server", "ReplicaManager", "UnderReplicatedPartitions"),
     "kafka_server_replicamanager_underreplicatedpartitions"),
    (MetricName("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec"),
     "kafka_controller_controllerstats_uncleanleaderelections"),  # + _total as a counter
    (MetricName("kafka.network", "RequestMetrics", "RequestsPerSec", (("request", "Produce"), ("version", "9"))),
     "kafka_network_requestmetrics_requests"),
    (MetricName("kafka.server", "broker-metadata-metrics", None, attribute="metadata-apply-error-count"),
     "kafka_server_broker_metadata_metrics_metadata_apply_error_count"),
    (MetricName("kafka.coordinator.group", "GroupMetadataManager", "NumGroups"),
     "kafka_coordinator_group_groupmetadatamanager_numgroups"),
    (MetricName.kip_name("kafka.controller.unclean_recovery_partitions_count"),
     "kafka_controller_unclean_recovery_partitions_count"),
])
def test_names_render_as_jmx_exporter_renders_kafkas_mbeans(name, expected):
    assert name.prometheus() == expected


def test_exposition_is_prometheus_text_with_kafka_names_and_mbean_help():
    """Counters get _total, histograms are summaries with jmx_exporter's quantile labels ("0.50") and
    _count, tags are labels, and each family's HELP is its MBean name."""
    metrics = KafkaMetrics()
    metrics.gauge(bm.LEADER_COUNT, lambda: 3)
    metrics.meter(bm.REQUESTS.with_tags(("request", "Produce"), ("version", "9"))).mark(5)
    hist = metrics.histogram(bm.TOTAL_TIME.with_tags(("request", "Produce")))
    for v in range(1, 101):
        hist.update(v)
    text = exposition(lambda: metrics).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["kafka_server_replicamanager_leadercount"].samples[0].value == 3
    assert families["kafka_server_replicamanager_leadercount"].documentation == (
        "kafka.server:type=ReplicaManager,name=LeaderCount")
    (requests,) = families["kafka_network_requestmetrics_requests"].samples
    assert (requests.name, requests.labels, requests.value) == (
        "kafka_network_requestmetrics_requests_total", {"request": "Produce", "version": "9"}, 5)
    summary = {(s.name, s.labels.get("quantile")): s.value for s in families[
        "kafka_network_requestmetrics_totaltimems"].samples}
    assert summary[("kafka_network_requestmetrics_totaltimems", "0.50")] == pytest.approx(50.5)
    assert summary[("kafka_network_requestmetrics_totaltimems", "0.999")] == 100
    assert summary[("kafka_network_requestmetrics_totaltimems_count", None)] == 100


def test_histogram_keeps_a_sliding_window_for_its_percentiles():
    """Yammer's reservoir holds 1028 samples; this one the latest 1028: old values stop counting."""
    h = Histogram()
    for _ in range(RESERVOIR_SIZE):
        h.update(1000.0)
    for _ in range(RESERVOIR_SIZE):
        h.update(1.0)
    assert h.count == 2 * RESERVOIR_SIZE and h.quantile(0.999) == 1.0
    assert Histogram().quantile(0.5) == 0.0


def _run(story: str, level: Level = Level.URM) -> ScenarioRun:
    run = ScenarioRun(load_scenario(SCENARIO_DIR / story), level)
    run.run()
    return run


def test_simulated_controller_counts_unclean_and_elr_elections_as_the_verdict_does():
    """The controller's ControllerStats meters, marked as it appends each PartitionChangeRecord, agree with
    the verdict's election counts (the recorder classifies the committed log independently)."""
    for story, level in (("last-replica-standing.yaml", Level.CLASSIC), ("elr-member-elected.yaml", Level.ELR)):
        run = _run(story, level)
        metrics = run.sim.controller.metrics
        verdict = run.recorder.final_metrics(run.sim.controller.image)
        assert metrics.value(cm.UNCLEAN_LEADER_ELECTIONS) == verdict["unclean_elections"], story
        assert metrics.value(cm.ELR_ELECTIONS) == verdict["elr_elections"], story
    assert verdict["elr_elections"] >= 1  # the ELR story elects from the ELR


def test_simulated_unclean_recovery_shows_in_the_controllers_kip_966_metrics():
    """urm-balanced-waits-for-every-replica: one recovery, finished; at the end nothing is recovering,
    the partition has a leader, and the image-derived gauges say so."""
    run = _run("urm-balanced-waits-for-every-replica.yaml")
    ctl = run.sim.controller
    metrics = ctl.metrics
    assert metrics.value(cm.UNCLEAN_RECOVERY_FINISHED_COUNT) == 1
    assert metrics.value(cm.UNCLEAN_RECOVERY_PARTITIONS_COUNT) == 0
    assert metrics.value(cm.OFFLINE_PARTITIONS_COUNT) == 0
    assert metrics.value(cm.ACTIVE_CONTROLLER_COUNT) == 1
    assert metrics.value(cm.GLOBAL_PARTITION_COUNT) == 1 and metrics.value(cm.GLOBAL_TOPIC_COUNT) == 1
    assert metrics.value(cm.ACTIVE_BROKER_COUNT) == 3 and metrics.value(cm.FENCED_BROKER_COUNT) == 0
    assert metrics.value(cm.LAST_APPLIED_RECORD_OFFSET) == ctl.end_offset - 1
    verdict = run.recorder.final_metrics(ctl.image)
    assert verdict["unclean_recovery_partitions_count"] == {"final": 0, "max": 1}
    assert key_gauges(metrics)["unclean_recovery_partitions_count"] == 0


def test_simulated_brokers_count_records_isr_changes_and_requests():
    """follower-lag (a follower falls out of the ISR and comes back): the leader's ISR meters moved, the
    records appended are counted in MessagesInPerSec, every hosted log has its LogEndOffset gauge, and
    Produce and follower fetches are counted and timed."""
    run = _run("follower-lag.yaml")
    brokers = [run.sim.broker(b) for b in sorted(k for k in run.sim.nodes if isinstance(k, int))]
    shrinks = sum(b.metrics.value(bm.ISR_SHRINKS) for b in brokers)
    expands = sum(b.metrics.value(bm.ISR_EXPANDS) for b in brokers)
    assert shrinks >= 1 and expands >= 1
    acked = run.recorder.acked_counts["all"] + run.recorder.acked_counts["1"]
    assert sum(b.metrics.value(bm.MESSAGES_IN) for b in brokers) >= acked > 0
    assert sum(b.metrics.value(bm.BYTES_IN) for b in brokers) > 0
    for b in brokers:
        samples = {s.name.mbean(): s.value for s in b.metrics.collect()}
        for (topic, index), p in b.partitions.items():
            key = f"kafka.log:type=Log,name=LogEndOffset,topic={topic},partition={index}"
            assert samples[key] == p.log.log_end_offset
        assert samples["kafka.server:type=ReplicaManager,name=PartitionCount"] == len(b.partitions)
    leader_requests = {s.name.mbean(): s.value for b in brokers for s in b.metrics.collect()
                       if s.name.name == "RequestsPerSec"}
    assert any("request=Produce" in k for k in leader_requests)
    assert any("request=FetchFollower,version=15" in k for k in leader_requests)
