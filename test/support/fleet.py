# Copyright 2026 robot_memory maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Robots with key pairs and the envelopes they send, for the fleet tests."""

import dataclasses
import datetime as dt
import ipaddress
import pathlib
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.fleet.envelope import envelope_for
from robot_memory.fleet.envelope import Provenance
from robot_memory.fleet.envelope import Trust
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.writer import render
from robot_memory.testing.fleet_servers import Child  # noqa: F401 - the tests import it here

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
A, B, C = 'RRN-000000000005', 'RRN-000000000001', 'RRN-000000000007'
ENCODER = 'Left wheel encoder intermittent under sustained load'
LIDAR = 'Lidar dropouts near the loading bay'


def entry(entry_id: str, text: str, count: int = 3, confidence: float = 0.9,
          entry_type: str = 'hardware_observation', at: dt.datetime = NOW) -> MemoryEntry:
    """Return an own entry last reinforced at ``at``."""
    return MemoryEntry(id=entry_id, type=entry_type, text=text, confidence=confidence,
                       first_seen=at - dt.timedelta(days=1), last_reinforced=at,
                       observation_count=count, tags=['fleet'])


@dataclasses.dataclass(frozen=True)
class Robot:
    """A robot of the tests: its RRN, key pair, site, model and firmware."""

    rrn: str
    private_key: pathlib.Path
    public_key: pathlib.Path
    site: str = 'depot-north'
    model: str = 'rover-2'
    firmware: str = '1.4.0'

    def envelope(self, entries, dream_id: int, at: dt.datetime = NOW, **provenance) -> bytes:
        """
        Return the sealed envelope of ``entries`` made by dream ``dream_id`` sent at ``at``.

        The dream's time is ``dream_at`` when given, else NOW plus ``dream_id`` hours.
        """
        fields = {'site': self.site, 'model': self.model, 'firmware': self.firmware,
                  'dream_at': NOW + dt.timedelta(hours=dream_id)}
        fields.update(provenance)
        document = MemoryDocument(rrn=self.rrn, last_updated=at, entries=list(entries))
        policy = FederationPolicy(private_key_path=self.private_key, max_entries=100)
        return envelope_for(document, at, policy, Provenance(dream_id=dream_id, **fields))


@dataclasses.dataclass(frozen=True)
class Robots:
    """Three robots (a, b, c) and a store's trust of all three."""

    a: Robot
    b: Robot
    c: Robot
    trust: Trust


def make_robots(directory: pathlib.Path) -> Robots:
    """Make key pairs for three robots in ``directory``; return them and the trust."""
    made = []
    for rrn, site, model, firmware in ((A, 'depot-north', 'rover-2', '1.4.0'),
                                       (B, 'depot-north', 'rover-2', '1.5.0'),
                                       (C, 'depot-south', 'lifter-1', '1.4.0')):
        private, public = directory / f'{rrn}.pem', directory / f'{rrn}.pub'
        generate_keypair(private, public)
        made.append(Robot(rrn, private, public, site, model, firmware))
    return Robots(*made, Trust({robot.rrn: robot.public_key for robot in made}))


def fleet_with_faults(store, robots: Robots, now: dt.datetime = NOW) -> None:
    """
    Fill ``store`` as a fleet operator finds it: a shared fault, a disagreement, a silent robot.

    A (depot-north, rover-2 1.4.0) sees ENCODER and LIDAR, B (depot-north, rover-2 1.5.0)
    ENCODER, both heard from at ``now``. C (depot-south, lifter-1) saw ENCODER and LIDAR two
    days before and resolved ENCODER two hours later, then fell silent.
    """
    two, one = now - dt.timedelta(days=2), now - dt.timedelta(days=2, hours=-2)
    deliveries = (
        (robots.c, [entry('mem-enc00003', ENCODER, at=two), entry('mem-lid00003', LIDAR, at=two)],
         1, two),
        (robots.c, [entry('mem-lid00003', LIDAR, count=5, at=one)], 2, one),
        (robots.a, [entry('mem-enc00001', ENCODER, at=now), entry('mem-lid00001', LIDAR, at=now)],
         1, now),
        (robots.b, [entry('mem-enc00002', ENCODER, at=now)], 1, now))
    for robot, entries, dream, at in deliveries:
        raw = robot.envelope(entries, dream, at=at, dream_at=at)
        ack = store.receive(raw, robot.site, robot.rrn, at)
        assert ack.status == 'stored', ack


def write_memory(path: pathlib.Path, rrn: str, entries, at: dt.datetime) -> None:
    """Write a robot's memory file holding ``entries``."""
    path.write_bytes(render(MemoryDocument(rrn=rrn, last_updated=at, entries=list(entries))))


def write_config(path: pathlib.Path, rrn: str, private_key: pathlib.Path,
                 fleet_public_key=None) -> pathlib.Path:
    """Write memory_node's parameters file: the robot's RRN, signing key, fleet key if given."""
    fleet = f'    fleet_public_key: "{fleet_public_key}"\n' if fleet_public_key else ''
    path.write_text(f'/**:\n  ros__parameters:\n    rrn: "{rrn}"\n{fleet}    federation:\n'
                    f'      private_key_path: "{private_key}"\n', encoding='utf-8')
    return path


def _certificate(name: str, key, issuer: str, issuer_key, ca: bool = False):
    now = dt.datetime.now(UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(hours=1))
               .not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:  # every node may listen on the loopback: name it both ways
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName('localhost'), x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_certificates(directory: pathlib.Path, ca_name: str, names) -> dict:
    """Make a CA and a certificate it signs for each of ``names``: name -> (ca, cert, key)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_path = directory / f'{ca_name}.pem'
    ca_path.write_bytes(_certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
                        .public_bytes(serialization.Encoding.PEM))
    made = {}
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        certificate, key_path = directory / f'{name}.pem', directory / f'{name}.key'
        certificate.write_bytes(_certificate(name, key, ca_name, ca_key)
                                .public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        key_path.chmod(0o600)
        made[name] = (ca_path, certificate, key_path)
    return made


def until(check, what: str, timeout_s: float = 30.0):
    """Return ``check()`` once it is truthy; fail the test saying ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    pytest.fail(f'{what} within {timeout_s:g} s')
