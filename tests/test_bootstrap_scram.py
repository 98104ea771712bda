"""``kraftlog storage format --add-scram`` (KIP-900, issue 36): SCRAM credentials as bootstrap metadata. The argument
is Kafka's ``ScramParser`` syntax; the credential goes into the controller's bootstrap checkpoint, and the first
active controller writes it into an empty metadata log (Kafka's bootstrap metadata), so that a user can log in
before any admin could create one. Checked sans I/O for the single controller and a three-voter quorum, and that a
restarted controller writes nothing twice."""

from __future__ import annotations

import base64
import random

import pytest

from kraftlog.controller.controller import QuorumController
from kraftlog.level import Level
from kraftlog.metadata.records import UserScramCredentialRecord
from kraftlog.net.storage_cli import parse_add_scram
from kraftlog.protocol.sasl import credential_from_salted_password, scram_credential
from kraftlog.raft.bootstrap import format_quorum, read_bootstrap, read_bootstrap_records
from kraftlog.sim.cluster import SimCluster
from kraftlog.storage.disk import SimDisk

SALT = bytes(range(32))


def test_a_password_argument_is_the_credential_kafka_derives():
    rec = parse_add_scram("SCRAM-SHA-512=[name=alice,password=alice-secret]", SALT)
    expected = scram_credential("SCRAM-SHA-512", "alice-secret", SALT, 4096)  # Kafka's default iterations
    assert rec == UserScramCredentialRecord("alice", 2, SALT, expected.stored_key, expected.server_key, 4096)
    salt = base64.b64encode(b"sixteen-byte-slt").decode()
    rec = parse_add_scram(f'scram-sha-256=[name=bob,iterations=8192,salt="{salt}",password=b]', SALT)
    assert (rec.name, rec.mechanism, rec.salt, rec.iterations) == ("bob", 1, b"sixteen-byte-slt", 8192)


def test_a_salted_password_argument_keeps_its_salt():
    salted = bytes(range(64))
    text = (f'SCRAM-SHA-512=[name=carol,iterations=4096,salt="{base64.b64encode(SALT).decode()}",'
            f'saltedpassword="{base64.b64encode(salted).decode()}"]')
    rec = parse_add_scram(text, b"unused")
    c = credential_from_salted_password("SCRAM-SHA-512", SALT, salted, 4096)
    assert (rec.salt, rec.stored_key, rec.server_key) == (c.salt, c.stored_key, c.server_key)


@pytest.mark.parametrize("text, problem", [
    ("SCRAM-SHA-1=[name=a,password=s3cr3t-pw]", "is not SCRAM-SHA-256 or SCRAM-SHA-512"),
    ("SCRAM-SHA-512=name=a,password=s3cr3t-pw", "expected SCRAM-SHA-512=[name=...,password=...]"),
    ("SCRAM-SHA-512=[password=s3cr3t-pw]", "name=... is required"),
    ("SCRAM-SHA-512=[name=a]", "password=... (or salt and saltedpassword) is required"),
    ("SCRAM-SHA-512=[name=a,password=s3cr3t-pw,colour=red]", "'colour' is not one of"),
    ("SCRAM-SHA-512=[name=a,password=s3cr3t-pw,iterations=100]", "iterations 100 outside 4096..16384"),
    ("SCRAM-SHA-512=[name=a,password=s3cr3t-pw,salt=***]", "--add-scram a:"),
    ("SCRAM-SHA-512=[name=a,password=s3cr3t-pw,salt=AAAA]", "salt"),  # scramp: at least 12 bytes
    ("SCRAM-SHA-512=[name=a,saltedpassword=AAAA]", "saltedpassword goes with salt and without password"),
])
def test_a_bad_argument_names_its_problem_and_never_the_password(text, problem):
    with pytest.raises(ValueError) as err:
        parse_add_scram(text, SALT)
    assert problem in str(err.value) and "s3cr3t" not in str(err.value), str(err.value)


def _alice() -> UserScramCredentialRecord:
    return parse_add_scram("SCRAM-SHA-512=[name=alice,password=alice-secret]", SALT)


def test_the_single_controller_writes_the_bootstrap_credentials_into_its_empty_log_once():
    disk = SimDisk(None)
    format_quorum(disk, 0, None, records=[_alice()])
    assert read_bootstrap(disk) is None and read_bootstrap_records(disk) == [_alice()]  # no voters: static
    ctl = QuorumController({}, Level.ELR, disk, random.Random(0), 0)
    assert ctl.image.scram_credentials == {("alice", 2): _alice()}
    end = ctl.end_offset
    again = QuorumController({}, Level.ELR, disk, random.Random(0), 1000)  # restarted on the same log
    assert again.image.scram_credentials == {("alice", 2): _alice()} and again.end_offset == end


def test_the_first_active_controller_of_a_quorum_writes_the_bootstrap_credentials():
    sim = SimCluster(1, {}, Level.ELR, 3, controllers=3)
    for cid in sim.quorum_ids:
        format_quorum(sim.disks[cid], 0, None, records=[_alice()])
    for cid in sim.quorum_ids:
        sim.start_controller(cid)

    def committed_everywhere(s: SimCluster) -> bool:
        return all(c.quorum is not None and c.quorum.committed_image.scram_credentials for c in s.controllers())
    assert sim.run_until(30_000, committed_everywhere)
    for c in sim.controllers():
        assert c.quorum is not None and c.quorum.committed_image.scram_credentials == {("alice", 2): _alice()}
    # written once, by the first active controller
    for c in sim.controllers():
        assert sum(isinstance(r, UserScramCredentialRecord) for r in c.log) == 1
