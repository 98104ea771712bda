"""The classic consumer-group protocol of :class:`~kraftlog.broker.group_coordinator.GroupCoordinator`
(Kafka's ``kafka.coordinator.group.GroupCoordinator``), driven directly with explicit times (ms), an
in-memory disk and a seeded rng. Each test is named after the rule it checks."""

from __future__ import annotations

import pytest

from coordinator_fakes import MemoryWriter, coordinator_over
from kraftlog.broker.group_coordinator import (
    COMPLETING_REBALANCE,
    EMPTY,
    GROUP_CONFIGS,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PREPARING_REBALANCE,
    STABLE,
    GroupCoordinator,
    group_config,
)
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors

G = "g"
SESSION = 10_000  # ms
REBALANCE = 30_000  # ms
DELAY = 3_000  # group.initial.rebalance.delay.ms default
RANGE = (("range", b"range-meta"),)


class Tok:
    """A request token (the broker passes the request envelope): compared by identity."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Tok({self.name})"


def coordinator(config: dict[str, str] | None = None, seed: int = 7) -> GroupCoordinator:
    return coordinator_over(MemoryWriter(), config, seed)


def join_req(member_id: str = "", protocols=RANGE, session: int = SESSION, rebalance: int = REBALANCE,
             protocol_type: str = "consumer", instance: str | None = None, group: str = G) -> m.JoinGroupRequest:
    return m.JoinGroupRequest(group, session, member_id, protocol_type,
                              tuple(m.JoinGroupRequestProtocol(n, meta) for n, meta in protocols),
                              rebalance, instance)


def sync_req(member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             protocol_name: str | None = "range", instance: str | None = None) -> m.SyncGroupRequest:
    return m.SyncGroupRequest(G, generation, member_id,
                              tuple(m.SyncGroupRequestAssignment(k, v) for k, v in (assignments or {}).items()),
                              instance, "consumer", protocol_name)


def heartbeat(gc: GroupCoordinator, now: int, member_id: str, generation: int, instance: str | None = None) -> int:
    return gc.handle(now, Tok("hb"), "c", m.HeartbeatRequest(G, generation, member_id, instance)).error_code


def new_member_id(gc: GroupCoordinator, now: int, client: str = "c", **kw) -> str:
    """The KIP-394 first round trip: JoinGroup v4+ with no member id → MEMBER_ID_REQUIRED + an id."""
    r = gc.handle(now, Tok("first"), client, join_req(**kw))
    assert r.error_code == Errors.MEMBER_ID_REQUIRED
    assert r.member_id.startswith(f"{client}-")
    return r.member_id


def answers(gc: GroupCoordinator) -> dict[Tok, object]:
    return dict(gc.take_responses())


def joined_group(gc: GroupCoordinator, n: int, now: int = 0, **kw):
    """``n`` dynamic members join at ``now`` and the join completes (CompletingRebalance); returns
    (member ids in join order, their join tokens, the join responses by token, time reached)."""
    ids = [new_member_id(gc, now, client=f"c{i}", **kw) for i in range(n)]
    toks = [Tok(f"j{i}") for i in range(n)]
    for mid, tok in zip(ids, toks, strict=True):
        assert gc.handle(now, tok, "c", join_req(mid, **kw)) is None
    joined: dict = {}
    while not joined:  # the initial delay, extended once when several members joined during it
        now = gc.next_deadline()
        gc.tick(now)
        joined = answers(gc)
    return ids, toks, joined, now


def stable_group(gc: GroupCoordinator, n: int, now: int = 0, **kw):
    """Form a Stable group of ``n`` dynamic members at ``now``; returns (member ids in join order,
    generation, time reached). Each member's assignment is ``b"a-<index>"``."""
    ids, toks, joined, now = joined_group(gc, n, now, **kw)
    generation = joined[toks[0]].generation_id
    leader = joined[toks[0]].leader
    assert leader == ids[0]
    followers = [Tok(f"s{i}") for i in range(1, n)]
    for i in range(1, n):
        assert gc.handle(now, followers[i - 1], "c", sync_req(ids[i], generation)) is None
    r = gc.handle(now, Tok("s0"), "c", sync_req(ids[0], generation, {mid: f"a-{i}".encode()
                                                                    for i, mid in enumerate(ids)}))
    assert r.error_code == Errors.NONE and r.assignment == b"a-0"
    synced = answers(gc)
    assert [synced[t].assignment for t in followers] == [f"a-{i}".encode() for i in range(1, n)]
    assert gc.describe(G).state == STABLE
    return ids, generation, now


# ============================================================================ JoinGroup
def test_first_join_gets_member_id_required_then_join_completes_after_initial_delay():
    gc = coordinator()
    r = gc.handle(0, Tok("a"), "client-1", join_req())
    assert r.error_code == Errors.MEMBER_ID_REQUIRED and r.generation_id == -1
    mid = r.member_id
    assert mid.startswith("client-1-") and len(mid) == len("client-1-") + 36  # f"{client_id}-{uuid}"
    assert gc.describe(G).state == EMPTY and gc.describe(G).members == ()  # pending, not yet a member
    tok = Tok("join")
    assert gc.handle(100, tok, "client-1", join_req(mid)) is None  # parked
    assert gc.describe(G).state == PREPARING_REBALANCE
    assert gc.next_deadline() == 100 + DELAY  # InitialDelayedJoin
    gc.tick(100 + DELAY - 1)
    assert gc.take_responses() == []
    gc.tick(100 + DELAY)
    [(t, resp)] = gc.take_responses()
    assert t is tok
    assert (resp.error_code, resp.member_id, resp.generation_id, resp.leader) == (Errors.NONE, mid, 1, mid)
    assert (resp.protocol_type, resp.protocol_name) == ("consumer", "range")
    assert resp.members == (m.JoinGroupResponseMember(mid, b"range-meta"),)
    assert gc.describe(G).state == COMPLETING_REBALANCE


def test_join_before_v4_adds_the_member_without_member_id_required():
    gc = coordinator()
    tok = Tok("a")
    assert gc.handle(0, tok, "old", join_req(), version=3) is None
    [mid] = gc.describe(G).members
    assert mid.startswith("old-")
    gc.tick(DELAY)
    [(t, resp)] = gc.take_responses()
    assert t is tok and resp.member_id == mid and resp.generation_id == 1


def test_v0_join_uses_the_session_timeout_as_rebalance_timeout():
    gc = coordinator({"group.initial.rebalance.delay.ms": "0"})
    gc.handle(0, Tok("a"), "c", join_req(rebalance=99_999), version=0)  # v0 carries no rebalance timeout
    gc.tick(0)
    [(_, first)] = gc.take_responses()
    gc.handle(0, Tok("s"), "c", sync_req(first.member_id, 1, {}), version=0)
    gc.handle(10, Tok("b"), "c", join_req(rebalance=99_999), version=0)  # a second member: rebalance
    assert gc.timers.entries[("join", G)][0] == 10 + SESSION  # the DelayedJoin: the session timeout


def test_member_ids_come_from_the_injected_rng():
    a = [coordinator(seed=3).handle(0, Tok("x"), "c", join_req()).member_id for _ in range(2)]
    b = coordinator(seed=4).handle(0, Tok("x"), "c", join_req()).member_id
    assert a[0] == a[1] != b


def test_two_members_join_leader_gets_every_members_metadata_follower_none_same_generation():
    gc = coordinator()
    a = new_member_id(gc, 0, client="a")
    b = new_member_id(gc, 0, client="b")
    ta, tb = Tok("a"), Tok("b")
    assert gc.handle(0, ta, "a", join_req(a, protocols=(("range", b"A"),))) is None
    assert gc.handle(50, tb, "b", join_req(b, protocols=(("range", b"B"),))) is None
    gc.tick(DELAY)  # b joined during the delay: extended by min(delay, remaining)
    assert gc.take_responses() == []
    gc.tick(2 * DELAY)
    out = answers(gc)
    ra, rb = out[ta], out[tb]
    assert ra.leader == rb.leader == a
    assert ra.generation_id == rb.generation_id == 1
    assert ra.members == (m.JoinGroupResponseMember(a, b"A"), m.JoinGroupResponseMember(b, b"B"))
    assert rb.members == ()
    assert rb.protocol_name == "range"


def test_initial_delay_is_extended_by_new_joins_up_to_the_rebalance_timeout():
    gc = coordinator()
    rebalance = 7_000  # remaining after the first delay: 4000
    ids = [new_member_id(gc, 0, client=f"c{i}", rebalance=rebalance) for i in range(4)]
    gc.handle(0, Tok("j0"), "c", join_req(ids[0], rebalance=rebalance))
    assert gc.next_deadline() == 3000
    gc.handle(1000, Tok("j1"), "c", join_req(ids[1], rebalance=rebalance))
    gc.tick(3000)  # new member: wait min(3000, 4000) more; remaining 4000 - 3000 = 1000
    assert gc.next_deadline() == 6000
    gc.handle(4000, Tok("j2"), "c", join_req(ids[2], rebalance=rebalance))
    gc.tick(6000)  # new member: wait min(3000, 1000); remaining max(1000 - 3000, 0) = 0
    assert gc.next_deadline() == 7000
    gc.handle(6500, Tok("j3"), "c", join_req(ids[3], rebalance=rebalance))
    gc.tick(7000)  # no remaining time: the join completes despite the new member
    out = gc.take_responses()
    assert len(out) == 4 and {r.generation_id for _, r in out} == {1}


def test_protocol_is_chosen_by_vote_among_protocols_every_member_supports():
    gc = coordinator()
    prefs = [(("roundrobin", b"1"), ("range", b"1"), ("sticky", b"1")),
             (("range", b"2"), ("roundrobin", b"2")),
             (("range", b"3"), ("roundrobin", b"3"), ("sticky", b"3"))]
    ids = [new_member_id(gc, 0, protocols=p) for p in prefs]
    toks = [Tok(str(i)) for i in range(3)]
    for mid, tok, p in zip(ids, toks, prefs, strict=True):
        gc.handle(0, tok, "c", join_req(mid, protocols=p))
    gc.tick(DELAY)
    gc.tick(2 * DELAY)
    out = answers(gc)
    # candidates {roundrobin, range} (sticky is not supported by the second); votes range 2, roundrobin 1
    assert {r.protocol_name for r in out.values()} == {"range"}
    assert out[toks[0]].members[0].metadata == b"1"


def test_third_member_joining_triggers_a_rebalance_and_old_members_rejoin_into_the_next_generation():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    c = new_member_id(gc, now, client="c")
    tc = Tok("c")
    assert gc.handle(now, tc, "c", join_req(c)) is None
    assert gc.describe(G).state == PREPARING_REBALANCE
    assert heartbeat(gc, now + 100, a, gen) == Errors.REBALANCE_IN_PROGRESS
    ta, tb = Tok("a"), Tok("b")
    assert gc.handle(now + 200, ta, "c", join_req(a)) is None
    assert gc.take_responses() == []
    r = gc.handle(now + 300, tb, "c", join_req(b))  # the last one: the join completes at once
    out = answers(gc)
    assert r.error_code == Errors.NONE and r.generation_id == gen + 1 and r.members == ()
    assert out[ta].generation_id == out[tc].generation_id == gen + 1
    assert out[ta].leader == a and [x.member_id for x in out[ta].members] == [a, b, c]
    assert out[tc].members == ()
    assert gc.describe(G).state == COMPLETING_REBALANCE


def test_pending_member_id_blocks_the_rebalance_until_it_rejoins_or_its_session_expires():
    gc = coordinator()
    (a,), gen, now = stable_group(gc, 1)
    pending = new_member_id(gc, now)
    ta = Tok("a")
    assert gc.handle(now, ta, "c", join_req(a)) is None  # leader rejoin: but a pending member exists
    assert gc.describe(G).state == PREPARING_REBALANCE
    assert gc.next_deadline() == now + SESSION  # the pending member's expiry comes before the rebalance timeout
    gc.tick(now + SESSION)
    [(t, r)] = gc.take_responses()
    assert t is ta and r.generation_id == gen + 1 and [x.member_id for x in r.members] == [a]
    late = gc.handle(now + SESSION + 1, Tok("late"), "c", join_req(pending))
    assert late.error_code == Errors.UNKNOWN_MEMBER_ID


def test_join_with_unknown_member_id_is_unknown_member_id():
    gc = coordinator()
    assert gc.handle(0, Tok("x"), "c", join_req("nobody")).error_code == Errors.UNKNOWN_MEMBER_ID  # no group
    (a,), gen, now = stable_group(gc, 1)
    assert gc.handle(now, Tok("y"), "c", join_req("nobody")).error_code == Errors.UNKNOWN_MEMBER_ID


def test_follower_rejoining_stable_group_with_same_metadata_gets_the_current_generation():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    r = gc.handle(now, Tok("b"), "c", join_req(b))
    assert (r.error_code, r.generation_id, r.leader, r.members) == (Errors.NONE, gen, a, ())
    assert gc.describe(G).state == STABLE


def test_leader_rejoining_stable_group_triggers_a_rebalance():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    assert gc.handle(now, Tok("a"), "c", join_req(a)) is None
    assert gc.describe(G).state == PREPARING_REBALANCE


def test_member_rejoining_with_changed_metadata_triggers_a_rebalance():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    assert gc.handle(now, Tok("b"), "c", join_req(b, protocols=(("range", b"new"),))) is None
    assert gc.describe(G).state == PREPARING_REBALANCE


def test_rejoin_during_completing_rebalance_returns_the_generation_again_or_rebalances_on_change():
    gc = coordinator()
    (a, b), _, _, now = joined_group(gc, 2)
    assert now == 2 * DELAY
    again = gc.handle(2 * DELAY, Tok("a2"), "c", join_req(a))  # the leader lost its response
    assert again.generation_id == 1 and [x.member_id for x in again.members] == [a, b]
    assert gc.handle(2 * DELAY, Tok("b2"), "c", join_req(b)).members == ()
    ts = Tok("sync-b")
    assert gc.handle(2 * DELAY, ts, "c", sync_req(b, 1)) is None  # parked
    assert gc.handle(2 * DELAY, Tok("a3"), "c", join_req(a, protocols=(("range", b"changed"),))) is None
    [(t, r)] = gc.take_responses()  # the parked SyncGroup is told to rejoin
    assert t is ts and r.error_code == Errors.REBALANCE_IN_PROGRESS
    assert gc.describe(G).state == PREPARING_REBALANCE


def test_inconsistent_group_protocol_on_protocol_type_mismatch_or_no_common_protocol():
    gc = coordinator()
    (a,), gen, now = stable_group(gc, 1)
    assert gc.handle(now, Tok("x"), "c", join_req(protocol_type="connect")).error_code == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    r = gc.handle(now, Tok("y"), "c", join_req(protocols=(("roundrobin", b""),)))
    assert (r.error_code, r.member_id) == (Errors.INCONSISTENT_GROUP_PROTOCOL, "")
    r = gc.handle(now, Tok("z"), "c", join_req(a, protocols=(("roundrobin", b""),)))
    assert (r.error_code, r.member_id) == (Errors.INCONSISTENT_GROUP_PROTOCOL, a)
    # an Empty group needs a protocol type and at least one protocol
    assert gc.handle(0, Tok("e"), "c", join_req(protocol_type="", group="h")).error_code == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    assert gc.handle(0, Tok("f"), "c", join_req(protocols=(), group="h")).error_code == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    # SyncGroup naming another protocol than the group's
    assert gc.handle(now, Tok("s"), "c", sync_req(a, gen, protocol_name="roundrobin")).error_code == \
        Errors.INCONSISTENT_GROUP_PROTOCOL


def test_invalid_session_timeout_outside_min_and_max():
    gc = coordinator()
    assert gc.handle(0, Tok("a"), "c", join_req(session=5_999)).error_code == Errors.INVALID_SESSION_TIMEOUT
    assert gc.handle(0, Tok("b"), "c", join_req(session=1_800_001)).error_code == Errors.INVALID_SESSION_TIMEOUT
    assert gc.handle(0, Tok("c"), "c", join_req(session=6_000)).error_code == Errors.MEMBER_ID_REQUIRED
    gc = coordinator({"group.min.session.timeout.ms": "1000", "group.max.session.timeout.ms": "2000"})
    assert gc.handle(0, Tok("d"), "c", join_req(session=1_000)).error_code == Errors.MEMBER_ID_REQUIRED
    assert gc.handle(0, Tok("e"), "c", join_req(session=2_001)).error_code == Errors.INVALID_SESSION_TIMEOUT


def test_configs_default_to_kafkas_values():
    assert {name: group_config(name, {}) for name in GROUP_CONFIGS} == {
        "group.min.session.timeout.ms": 6000, "group.max.session.timeout.ms": 1800000,
        "group.initial.rebalance.delay.ms": 3000, "group.max.size": 2147483647}
    assert group_config("group.max.size", {"group.max.size": "5"}) == 5


def test_empty_group_id_is_invalid_group_id():
    gc = coordinator()
    r = gc.handle(0, Tok("j"), "c", join_req(group=""))
    assert r.error_code == Errors.INVALID_GROUP_ID
    assert gc.handle(0, Tok("s"), "c", m.SyncGroupRequest("", 1, "x", (), None, "consumer", "range")).error_code \
        == Errors.INVALID_GROUP_ID
    assert gc.handle(0, Tok("h"), "c", m.HeartbeatRequest("", 1, "x")).error_code == Errors.INVALID_GROUP_ID
    assert gc.handle(0, Tok("l"), "c", m.LeaveGroupRequest("", (m.MemberIdentity("x"),))).error_code == \
        Errors.INVALID_GROUP_ID


def test_group_max_size_rejects_joins_beyond_it():
    gc = coordinator({"group.max.size": "1"})
    (a,), gen, now = stable_group(gc, 1)
    r = gc.handle(now, Tok("v3"), "c", join_req(), version=3)
    assert (r.error_code, r.member_id) == (Errors.GROUP_MAX_SIZE_REACHED, "")
    r = gc.handle(now, Tok("v9"), "c", join_req())  # refused before a member id is handed out
    assert (r.error_code, r.member_id) == (Errors.GROUP_MAX_SIZE_REACHED, "")
    assert gc.describe(G).members == (a,)
    assert gc.handle(now, Tok("a"), "c", join_req(a)).generation_id == gen + 1  # a member is accepted


def test_group_max_size_counts_rejoined_members_during_a_rebalance():
    gc = coordinator({"group.max.size": "2"})
    (a,), gen, now = stable_group(gc, 1)
    p = new_member_id(gc, now)
    q = new_member_id(gc, now)
    assert gc.handle(now, Tok("p"), "c", join_req(p)) is None  # 2 members; PreparingRebalance, 1 rejoined
    assert gc.handle(now, Tok("q"), "c", join_req(q)) is None  # 1 rejoined < 2: accepted (3 members)
    r = gc.handle(now, Tok("a"), "c", join_req(a))  # 2 rejoined: the last to rejoin is refused and removed
    assert (r.error_code, r.member_id) == (Errors.GROUP_MAX_SIZE_REACHED, "")
    out = gc.take_responses()  # a's removal lets the join complete with p and q
    assert {resp.generation_id for _, resp in out} == {gen + 1}
    assert gc.describe(G).members == (p, q) and gc.describe(G).leader == p


def test_new_member_is_dropped_if_its_join_waits_longer_than_the_new_member_join_timeout():
    gc = coordinator()
    long_rebalance = 600_000
    (a,), gen, now = stable_group(gc, 1, rebalance=long_rebalance)
    b = new_member_id(gc, now, rebalance=long_rebalance)
    tb = Tok("b")
    assert gc.handle(now, tb, "c", join_req(b, rebalance=long_rebalance)) is None
    # a does not rejoin but keeps heartbeating: the rebalance waits for it up to 600 s
    t = now
    while t + SESSION // 2 < now + NEW_MEMBER_JOIN_TIMEOUT_MS:
        t += SESSION // 2
        gc.tick(t)
        assert heartbeat(gc, t, a, gen) == Errors.REBALANCE_IN_PROGRESS
    assert gc.take_responses() == []
    gc.tick(now + NEW_MEMBER_JOIN_TIMEOUT_MS)
    [(tok, r)] = gc.take_responses()
    assert tok is tb and (r.error_code, r.member_id) == (Errors.UNKNOWN_MEMBER_ID, "")
    assert gc.describe(G).members == (a,)


# ============================================================================ SyncGroup
def test_follower_sync_parks_until_the_leaders_and_gets_its_own_assignment():
    gc = coordinator()
    (a, b, c), _, _, now = joined_group(gc, 3)
    assert now == 2 * DELAY
    tb, tc = Tok("sb"), Tok("sc")
    assert gc.handle(6100, tb, "c", sync_req(b, 1)) is None
    assert gc.handle(6200, tc, "c", sync_req(c, 1)) is None
    assert gc.take_responses() == []
    assert gc.describe(G).state == COMPLETING_REBALANCE
    r = gc.handle(6300, Tok("sa"), "c", sync_req(a, 1, {a: b"for-a", b: b"for-b", "stranger": b"x"}))
    assert (r.error_code, r.assignment) == (Errors.NONE, b"for-a")
    assert (r.protocol_type, r.protocol_name) == ("consumer", "range")
    out = gc.take_responses()
    assert [t for t, _ in out] == [tb, tc]  # in join order
    assert out[0][1].assignment == b"for-b"
    assert out[1][1].assignment == b""  # missing from the leader's assignment
    assert gc.describe(G).state == STABLE
    # in Stable a SyncGroup returns the current assignment
    assert gc.handle(6400, Tok("again"), "c", sync_req(b, 1)).assignment == b"for-b"


def test_sync_group_errors_unknown_member_illegal_generation_rebalance_in_progress():
    gc = coordinator()
    assert gc.handle(0, Tok("x"), "c", sync_req("who", 1)).error_code == Errors.UNKNOWN_MEMBER_ID  # no group
    (a, b), gen, now = stable_group(gc, 2)
    assert gc.handle(now, Tok("u"), "c", sync_req("who", gen)).error_code == Errors.UNKNOWN_MEMBER_ID
    r = gc.handle(now, Tok("i"), "c", sync_req(b, gen + 1))
    assert (r.error_code, r.assignment) == (Errors.ILLEGAL_GENERATION, b"")
    gc.handle(now, Tok("a"), "c", join_req(a))  # the leader rejoins: PreparingRebalance
    assert gc.handle(now, Tok("p"), "c", sync_req(b, gen)).error_code == Errors.REBALANCE_IN_PROGRESS


def test_sync_group_v5_needs_protocol_type_and_name():
    gc = coordinator()
    (a,), gen, now = stable_group(gc, 1)
    bare = m.SyncGroupRequest(G, gen, a)
    assert gc.handle(now, Tok("v5"), "c", bare).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    r = gc.handle(now, Tok("v4"), "c", bare, version=4)
    assert (r.error_code, r.assignment) == (Errors.NONE, b"a-0")


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout():
    gc = coordinator()
    (a, b), _, _, now = joined_group(gc, 2)
    assert now == 2 * DELAY
    gc.handle(2 * DELAY, Tok("sa"), "c", sync_req(a, 1, {a: b"x", b: b"y"}))  # the leader syncs; b never does
    assert gc.describe(G).state == STABLE
    t = 2 * DELAY
    while t + 5000 < 2 * DELAY + REBALANCE:
        t += 5000
        assert heartbeat(gc, t, a, 1) == Errors.NONE
        assert heartbeat(gc, t, b, 1) == Errors.NONE  # heartbeats do not excuse the missing SyncGroup
        gc.tick(t)
    assert gc.next_deadline() == 2 * DELAY + REBALANCE
    gc.tick(2 * DELAY + REBALANCE)
    assert gc.describe(G).members == (a,)
    assert gc.describe(G).state == PREPARING_REBALANCE
    assert heartbeat(gc, t + 1, b, 1) == Errors.UNKNOWN_MEMBER_ID


# ============================================================================ Heartbeat
def test_heartbeat_during_a_rebalance_is_rebalance_in_progress():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    assert heartbeat(gc, now, b, gen) == Errors.NONE
    gc.handle(now, Tok("a"), "c", join_req(a))
    assert gc.describe(G).state == PREPARING_REBALANCE
    assert heartbeat(gc, now + 1, b, gen) == Errors.REBALANCE_IN_PROGRESS


def test_heartbeat_errors_unknown_member_and_illegal_generation():
    gc = coordinator()
    assert heartbeat(gc, 0, "x", 1) == Errors.UNKNOWN_MEMBER_ID  # no group
    (a,), gen, now = stable_group(gc, 1)
    assert heartbeat(gc, now, "x", gen) == Errors.UNKNOWN_MEMBER_ID
    assert heartbeat(gc, now, a, gen - 1) == Errors.ILLEGAL_GENERATION
    assert heartbeat(gc, now, a, gen + 1) == Errors.ILLEGAL_GENERATION


def test_heartbeat_in_completing_rebalance_is_none():
    gc = coordinator()
    a = new_member_id(gc, 0)
    gc.handle(0, Tok("a"), "c", join_req(a))
    gc.tick(DELAY)
    assert gc.describe(G).state == COMPLETING_REBALANCE
    assert heartbeat(gc, DELAY + 1, a, 1) == Errors.NONE


def test_every_heartbeat_restarts_the_members_session():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    for t in range(now + 4000, now + 40_000, 4000):
        gc.tick(t)
        assert heartbeat(gc, t, a, gen) == Errors.NONE
        assert heartbeat(gc, t, b, gen) == Errors.NONE
    assert gc.describe(G).state == STABLE and gc.describe(G).members == (a, b)


def test_session_expiry_removes_a_silent_member_and_the_group_rebalances():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    t = now
    while t + 4000 < now + SESSION:
        t += 4000
        assert heartbeat(gc, t, a, gen) == Errors.NONE  # only a heartbeats
        gc.tick(t)
    assert gc.describe(G).members == (a, b)
    gc.tick(now + SESSION)  # b's session (restarted by its SyncGroup at `now`) expires
    assert gc.describe(G).members == (a,)
    assert gc.describe(G).state == PREPARING_REBALANCE
    assert heartbeat(gc, now + SESSION, a, gen) == Errors.REBALANCE_IN_PROGRESS
    r = gc.handle(now + SESSION, Tok("a"), "c", join_req(a))
    assert r.generation_id == gen + 1 and [x.member_id for x in r.members] == [a]
    # the last member's session expires too: the group is Empty
    gc.handle(now + SESSION, Tok("s"), "c", sync_req(a, gen + 1, {a: b""}))
    gc.tick(now + 2 * SESSION)
    summary = gc.describe(G)
    assert (summary.state, summary.members, summary.generation_id, summary.leader) == (EMPTY, (), gen + 2, "")
    assert gc.timers.next_deadline() is None


def test_member_with_a_parked_join_does_not_expire_while_waiting():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    gc.handle(now, Tok("a"), "c", join_req(a))  # a waits for b up to the rebalance timeout (> session)
    gc.tick(now + SESSION)  # b's session ends first: b is removed and a's join completes
    [(_, r)] = gc.take_responses()
    assert r.generation_id == gen + 1 and gc.describe(G).members == (a,)


# =========================================================================== rebalance timeout
def test_member_that_does_not_rejoin_within_the_rebalance_timeout_is_dropped():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    ta = Tok("a")
    gc.handle(now, ta, "c", join_req(a))
    # b keeps heartbeating (so its session does not expire) but never rejoins
    t = now
    while t + 5000 < now + REBALANCE:
        t += 5000
        assert heartbeat(gc, t, b, gen) == Errors.REBALANCE_IN_PROGRESS
        gc.tick(t)
    assert gc.take_responses() == []
    assert gc.next_deadline() == now + REBALANCE
    gc.tick(now + REBALANCE)
    [(tok, r)] = gc.take_responses()
    assert tok is ta and r.generation_id == gen + 1 and [x.member_id for x in r.members] == [a]
    assert gc.describe(G).members == (a,)
    assert heartbeat(gc, now + REBALANCE, b, gen) == Errors.UNKNOWN_MEMBER_ID


def test_leader_that_does_not_rejoin_is_replaced_by_a_member_that_did():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    tb = Tok("b")
    gc.handle(now, tb, "c", join_req(b, protocols=(("range", b"new"),)))
    gc.tick(now + REBALANCE)
    [(_, r)] = gc.take_responses()
    assert r.leader == b and [x.member_id for x in r.members] == [b]


# ============================================================================ LeaveGroup
def test_leave_group_rebalances_to_the_remaining_member():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    r = gc.handle(now, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity(a), m.MemberIdentity("ghost"))))
    assert r.error_code == Errors.NONE
    assert [(x.member_id, x.error_code) for x in r.members] == [(a, Errors.NONE), ("ghost", Errors.UNKNOWN_MEMBER_ID)]
    assert gc.describe(G).members == (b,) and gc.describe(G).leader == b
    assert gc.describe(G).state == PREPARING_REBALANCE
    j = gc.handle(now + 1, Tok("b"), "c", join_req(b))
    assert (j.generation_id, j.leader, [x.member_id for x in j.members]) == (gen + 1, b, [b])
    # the last member leaves: Empty at once
    gc.handle(now + 2, Tok("l2"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity(b),)))
    assert gc.describe(G).state == EMPTY and gc.describe(G).generation_id == gen + 2


def test_leave_group_answers_a_parked_join_unknown_member_id_and_forgets_pending_members():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    pending = new_member_id(gc, now)
    ta = Tok("a")
    gc.handle(now, ta, "c", join_req(a))
    r = gc.handle(now, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity(pending), m.MemberIdentity(a))))
    assert [x.error_code for x in r.members] == [Errors.NONE, Errors.NONE]
    [(tok, j)] = gc.take_responses()
    assert tok is ta and (j.error_code, j.member_id) == (Errors.UNKNOWN_MEMBER_ID, "")
    assert gc.handle(now, Tok("b"), "c", join_req(b)).generation_id == gen + 1  # only b was awaited


def test_leave_group_v2_reports_the_members_error_at_top_level_and_unknown_group():
    gc = coordinator()
    r = gc.handle(0, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity("x"),)))
    assert r.error_code == Errors.NONE and r.members[0].error_code == Errors.UNKNOWN_MEMBER_ID
    r = gc.handle(0, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity("x"),)), version=2)
    assert (r.error_code, r.members) == (Errors.UNKNOWN_MEMBER_ID, ())


# ============================================================================ static membership
def test_static_member_rejoining_a_stable_group_keeps_the_generation_without_rebalance():
    gc = coordinator()
    ta = Tok("a")
    assert gc.handle(0, ta, "c", join_req(instance="i-a")) is None  # static: no MEMBER_ID_REQUIRED
    tb = Tok("b")
    assert gc.handle(0, tb, "c", join_req(instance="i-b")) is None
    gc.tick(DELAY)
    gc.tick(2 * DELAY)
    out = answers(gc)
    a, b = out[ta].member_id, out[tb].member_id
    assert a.startswith("i-a-") and out[ta].members[0].group_instance_id == "i-a"
    gc.handle(6000, Tok("sb"), "c", sync_req(b, 1, instance="i-b"))
    gc.handle(6000, Tok("sa"), "c", sync_req(a, 1, {a: b"A", b: b"B"}, instance="i-a"))
    gc.take_responses()
    # b restarts: same instance id, no member id → a new id, same generation, no rebalance
    r = gc.handle(7000, Tok("b2"), "c", join_req(instance="i-b"))
    b2 = r.member_id
    assert (r.error_code, r.generation_id, r.leader, r.skip_assignment) == (Errors.NONE, 1, a, False)
    assert b2 != b and gc.describe(G).state == STABLE and gc.describe(G).members == (a, b2)
    assert gc.handle(7000, Tok("sb2"), "c", sync_req(b2, 1, instance="i-b")).assignment == b"B"
    # the old incarnation is fenced
    assert heartbeat(gc, 7000, b, 1, instance="i-b") == Errors.FENCED_INSTANCE_ID
    assert heartbeat(gc, 7000, b2, 1, instance="i-b") == Errors.NONE
    # the leader restarts (v9): it is told it leads, with the members, but to skip the assignment
    r = gc.handle(7000, Tok("a2"), "c", join_req(instance="i-a"))
    assert (r.leader, r.skip_assignment, len(r.members)) == (r.member_id, True, 2)
    # before v9 the old leader id is returned, so the restarted leader does not assign
    r = gc.handle(7000, Tok("a3"), "c", join_req(instance="i-a"), version=8)
    assert r.leader != r.member_id and r.members == ()
    # leaving by instance id alone removes the static member
    lv = gc.handle(7000, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity("", "i-b"),
                                                               m.MemberIdentity("", "i-zz"))))
    assert [x.error_code for x in lv.members] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert gc.describe(G).state == PREPARING_REBALANCE


def test_static_member_replaced_during_a_rebalance_fences_the_parked_join():
    gc = coordinator()
    t1 = Tok("1")
    gc.handle(0, t1, "c", join_req(instance="i"))
    t2 = Tok("2")
    assert gc.handle(100, t2, "c", join_req(instance="i")) is None  # a duplicate instance
    [(tok, r)] = gc.take_responses()
    assert tok is t1 and r.error_code == Errors.FENCED_INSTANCE_ID
    gc.tick(DELAY)
    [(tok, r)] = gc.take_responses()
    assert tok is t2 and r.error_code == Errors.NONE and r.generation_id == 1
    # unknown instance id with a member id → UNKNOWN_MEMBER_ID
    assert gc.handle(DELAY, Tok("u"), "c", join_req(r.member_id, instance="other")).error_code == \
        Errors.UNKNOWN_MEMBER_ID
    # in CompletingRebalance a static rejoin starts a rebalance (here complete at once: one member)
    r3 = gc.handle(DELAY, Tok("3"), "c", join_req(instance="i"))
    assert r3.generation_id == 2 and r3.member_id != r.member_id


def test_static_member_that_does_not_rejoin_stays_in_the_group():
    gc = coordinator()
    ta, tb = Tok("a"), Tok("b")
    gc.handle(0, ta, "c", join_req(instance="i-a"))
    gc.handle(0, tb, "c", join_req(instance="i-b"))
    gc.tick(DELAY)
    gc.tick(2 * DELAY)
    out = answers(gc)
    a, b = out[ta].member_id, out[tb].member_id
    gc.handle(6000, Tok("sb"), "c", sync_req(b, 1, instance="i-b"))
    gc.handle(6000, Tok("sa"), "c", sync_req(a, 1, {}, instance="i-a"))
    gc.take_responses()
    gc.handle(6000, Tok("a2"), "c", join_req(a, instance="i-a"))  # leader rejoins; b (static) does not
    for t in range(6000 + 5000, 6000 + REBALANCE, 5000):
        heartbeat(gc, t, b, 1, instance="i-b")
        gc.tick(t)
    gc.tick(6000 + REBALANCE)
    [(_, r)] = gc.take_responses()
    assert r.generation_id == 2 and [x.member_id for x in r.members] == [a, b]


def test_static_member_rejoin_that_changes_the_groups_protocol_rebalances():
    gc = coordinator()
    both = (("range", b"r"), ("roundrobin", b"rr"))
    gc.handle(0, Tok("a"), "c", join_req(protocols=both, instance="i"))
    gc.tick(DELAY)
    [(_, r)] = gc.take_responses()
    gc.handle(DELAY, Tok("s"), "c", sync_req(r.member_id, 1, {}, instance="i"))
    assert gc.describe(G).protocol_name == "range"
    r2 = gc.handle(DELAY, Tok("a2"), "c", join_req(protocols=both[::-1], instance="i"))
    assert (r2.generation_id, r2.protocol_name) == (2, "roundrobin")  # a rebalance, not the old generation


def test_static_members_that_do_not_rejoin_keep_the_join_waiting_until_their_sessions_expire():
    gc = coordinator()
    ta, tb = Tok("a"), Tok("b")
    gc.handle(0, ta, "c", join_req(instance="i-a"))
    gc.handle(0, tb, "c", join_req(instance="i-b"))
    gc.tick(DELAY)
    gc.tick(2 * DELAY)
    out = answers(gc)
    a, b = out[ta].member_id, out[tb].member_id
    now = 2 * DELAY
    gc.handle(now, Tok("sb"), "c", sync_req(b, 1, instance="i-b"))
    gc.handle(now, Tok("sa"), "c", sync_req(a, 1, {}, instance="i-a"))
    gc.handle(now, Tok("b2"), "c", join_req(b, protocols=(("range", b"new"),), instance="i-b"))  # rebalance
    gc.handle(now, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity(b, "i-b"),)))
    gc.take_responses()
    for t in range(now + 5000, now + REBALANCE + 1, 5000):  # a heartbeats but does not rejoin
        gc.tick(t)
        assert heartbeat(gc, t, a, 1, instance="i-a") == Errors.REBALANCE_IN_PROGRESS
    # the rebalance timeout passed: a static member is not dropped, and with no member rejoined there
    # is no next generation: another rebalance timeout starts
    assert gc.describe(G).state == PREPARING_REBALANCE and gc.describe(G).members == (a,)
    assert gc.timers.entries[("join", G)][0] == now + 2 * REBALANCE
    assert gc.take_responses() == []
    gc.tick(now + REBALANCE + SESSION)  # a stops heartbeating: its session ends, the group is Empty
    assert gc.describe(G).members == ()
    assert gc.describe(G).state == EMPTY and gc.describe(G).generation_id == 2


def test_static_leader_that_does_not_rejoin_hands_leadership_to_a_member_that_did():
    gc = coordinator()
    ts = Tok("s")
    gc.handle(0, ts, "c", join_req(instance="i-s"))
    d = new_member_id(gc, 0)
    td = Tok("d")
    gc.handle(0, td, "c", join_req(d))
    gc.tick(DELAY)
    gc.tick(2 * DELAY)
    out = answers(gc)
    s = out[ts].member_id
    assert out[ts].leader == s
    now = 2 * DELAY
    gc.handle(now, Tok("sd"), "c", sync_req(d, 1))
    gc.handle(now, Tok("ss"), "c", sync_req(s, 1, {}, instance="i-s"))
    gc.take_responses()
    td2 = Tok("d2")
    gc.handle(now, td2, "c", join_req(d, protocols=(("range", b"new"),)))  # only d rejoins
    for t in range(now + 5000, now + REBALANCE, 5000):
        heartbeat(gc, t, s, 1, instance="i-s")
        gc.tick(t)
    gc.tick(now + REBALANCE)
    [(tok, r)] = gc.take_responses()
    assert tok is td2 and r.leader == d and [x.member_id for x in r.members] == [s, d]


def test_pending_member_id_with_a_group_instance_id_is_refused():
    gc = coordinator()
    p = new_member_id(gc, 0)
    assert gc.handle(0, Tok("x"), "c", join_req(p, instance="i")).error_code == Errors.UNKNOWN_SERVER_ERROR


def test_sync_group_with_another_protocol_type_is_inconsistent_group_protocol():
    gc = coordinator()
    (a,), gen, now = stable_group(gc, 1)
    req = m.SyncGroupRequest(G, gen, a, (), None, "connect", "range")
    assert gc.handle(now, Tok("s"), "c", req).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


# ============================================================================ OffsetCommit
def commit(gc, now, generation=-1, member="", group=G, offset=5):
    req = m.OffsetCommitRequest(group, (m.OffsetCommitPartition("t", 0, offset),), generation, member)
    return gc.handle(now, Tok("oc"), "c", req).partitions[0].error_code


def fetched(gc, group=G):
    return gc.handle(0, Tok("of"), "c", m.OffsetFetchRequest(group, (("t", 0),))).partitions[0].committed_offset


def test_offset_commit_validates_group_membership():
    gc = coordinator()
    # simple consumer (assign()): generation -1, no member id, no group → accepted
    assert commit(gc, 0, group="simple", offset=3) == Errors.NONE and fetched(gc, "simple") == 3
    assert gc.describe("simple").state == EMPTY
    # a generation for a group the coordinator does not hold
    assert commit(gc, 0, generation=4, member="m", group="nogroup") == Errors.ILLEGAL_GENERATION
    (a, b), gen, now = stable_group(gc, 2)
    assert commit(gc, now) == Errors.UNKNOWN_MEMBER_ID  # generation -1 while the group has members
    assert commit(gc, now, gen, "stranger") == Errors.UNKNOWN_MEMBER_ID
    assert commit(gc, now, gen - 1, a) == Errors.ILLEGAL_GENERATION
    assert fetched(gc) == -1
    assert commit(gc, now, gen, a, offset=7) == Errors.NONE and fetched(gc) == 7
    # PreparingRebalance: still accepted from the current generation
    gc.handle(now, Tok("a"), "c", join_req(a))
    assert commit(gc, now, gen, b, offset=8) == Errors.NONE and fetched(gc) == 8
    gc.handle(now, Tok("b"), "c", join_req(b))
    assert gc.describe(G).state == COMPLETING_REBALANCE
    assert commit(gc, now, gen + 1, b, offset=9) == Errors.REBALANCE_IN_PROGRESS and fetched(gc) == 8
    # the group empties: a simple commit is accepted again
    gc.handle(now, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity(a), m.MemberIdentity(b))))
    assert gc.describe(G).state == EMPTY
    assert commit(gc, now, offset=10) == Errors.NONE and fetched(gc) == 10


def test_offset_commit_restarts_the_committers_session():
    gc = coordinator()
    (a,), gen, now = stable_group(gc, 1)
    for t in range(now + 4000, now + 30_000, 4000):
        gc.tick(t)
        assert commit(gc, t, gen, a) == Errors.NONE
    assert gc.describe(G).members == (a,)


def test_offset_fetch_returns_committed_offsets_regardless_of_membership():
    gc = coordinator()
    assert fetched(gc, "unknown") == -1
    commit(gc, 0, group="x", offset=42)
    r = gc.handle(0, Tok("f"), "c", m.OffsetFetchRequest("x", None))
    assert r.error_code == Errors.NONE and [(p.topic, p.committed_offset) for p in r.partitions] == [("t", 42)]


# ============================================================================ resign
def test_resign_answers_parked_requests_not_coordinator_and_drops_membership():
    gc = coordinator()
    (a, b), gen, now = stable_group(gc, 2)
    commit(gc, now, gen, a, offset=11)
    ta = Tok("a")
    gc.handle(now, ta, "c", join_req(a))  # parked JoinGroup (PreparingRebalance)
    other = "h"
    ids = [new_member_id(gc, now, group=other) for _ in range(2)]
    for i, mid in enumerate(ids):
        gc.handle(now, Tok(f"h{i}"), "c", join_req(mid, group=other))
    gc.tick(now + DELAY)
    gc.tick(now + 2 * DELAY)
    gc.take_responses()
    th = Tok("h-sync")
    assert gc.handle(now, th, "c", m.SyncGroupRequest(other, 1, ids[1], (), None, "consumer", "range")) is None
    gc.resign(now + 1, [G])  # only G moves away
    [(tok, r)] = gc.take_responses()
    assert tok is ta and (r.error_code, r.member_id) == (Errors.NOT_COORDINATOR, a)
    assert gc.describe(G) is None and gc.groups() == [other]
    assert fetched(gc) == 11  # committed offsets stay
    gc.resign(now + 2)  # everything
    [(tok, r)] = gc.take_responses()
    assert tok is th and r.error_code == Errors.NOT_COORDINATOR
    assert gc.groups() == [] and gc.timers.next_deadline() is None
    # a later join starts the group afresh
    assert gc.handle(now + 3, Tok("x"), "c", join_req(a)).error_code == Errors.UNKNOWN_MEMBER_ID


# ============================================================================ timers
def test_next_deadline_and_tick_agree():
    gc = coordinator()
    assert gc.timers.next_deadline() is None
    gc.tick(1_000_000)  # nothing to do
    assert gc.take_responses() == []
    a = new_member_id(gc, 0)
    assert gc.next_deadline() == SESSION  # the pending member id expires
    gc.handle(10, Tok("a"), "c", join_req(a))
    # every deadline reported is one where tick changes something, and nothing happens before it
    snapshots = []
    while (deadline := gc.next_deadline()) is not None and deadline < 10 * REBALANCE:
        before = (gc.describe(G), list(gc.timers.entries.items()))
        gc.tick(deadline - 1)
        assert (gc.describe(G), list(gc.timers.entries.items())) == before and gc.take_responses() == []
        gc.tick(deadline)
        after = (gc.describe(G), list(gc.timers.entries.items()), gc.take_responses())
        assert after[:2] != before or after[2]
        snapshots.append((deadline, gc.describe(G).state, len(gc.describe(G).members)))
    # the initial delay completes the join; the member never syncs nor heartbeats: its session (and
    # the pending sync) expire and the group ends Empty with no timer left
    assert snapshots[0] == (10 + DELAY, COMPLETING_REBALANCE, 1)
    assert snapshots[-1][1:] == (EMPTY, 0)
    assert gc.timers.next_deadline() is None


def test_handle_rejects_a_request_that_is_not_a_group_request():
    gc = coordinator()
    with pytest.raises(TypeError):
        gc.handle(0, Tok("x"), "c", m.InitProducerIdRequest(), version=4)


@pytest.mark.parametrize("group_id", ["..", ".", "a/b", "x.tmp", "y.log", "", "é %", "nul\x00byte", "g" * 300])
def test_any_group_id_is_stored_as_a_record_and_reloads(group_id):
    """A client chooses the group id: it is a string of an OffsetCommitKey, whatever its characters, and a
    coordinator that loads the partition again reads the same id and offset back."""
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    r = gc.handle(1, Tok("c"), "c", m.OffsetCommitRequest(group_id, (m.OffsetCommitPartition("t", 0, 7, 2),)))
    assert [p.error_code for p in r.partitions] == [Errors.NONE]
    again = coordinator_over(writer, now_ms=2)
    fetched = again.handle(2, Tok("f"), "c", m.OffsetFetchRequest(group_id, (("t", 0),)))
    assert [(p.committed_offset, p.committed_leader_epoch) for p in fetched.partitions] == [(7, 2)]
