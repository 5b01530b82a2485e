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

"""
In-process simulation of a fleet exchanging peer context (no DDS); prints JSON lines.

Each round every robot exchanges with ``k`` peers (the ``~/exchange_peer_context`` call:
the request carries the caller's payload, the reply the callee's), so each pair costs two
payloads. A robot relays only its OWN entries (RCAN §6: peer entries are never re-shared
as own), so a fact travels one hop: it reaches exactly the robots that exchanged with the
robot that learned it, and stays there until that peer block expires.

Topologies: ``ring`` (fixed neighbours i±1 … i±k/2), ``random`` (k peers drawn afresh each
round), ``mesh`` (everyone, every round). Every payload is built with ``build_payload``,
signed with Ed25519, checked with ``validate_payload`` (signatures required), merged with
``merge_peer_payload`` and followed by ``expire_peers``.

Lines:
``{"bench": "federation_round", ...}``  per round: ``sync_bytes`` (payload bytes sent that
    round), ``baseline_bytes`` (the same exchanges sending the sender's whole
    robot-memory.md, the naive way), ``ratio``, per-robot document bytes (mean / max) and
    peer entries (max), and how many robots hold the fact robot 0 learned in round 1.
``{"bench": "federation_summary", ...}``  per topology: rounds until the fact reached all
    other robots (null if it never did, with the count it reached), the bound the
    policy sets on peer entries per robot, and whether memory and bytes plateaued.

Usage: ``python bench/bench_federation.py [--quick] [--robots N] [--rounds R] [--fanout K]``.
"""

import argparse
import datetime as dt
import json
import pathlib
import random
import statistics
import sys
import tempfile
import time

try:
    from robot_memory.federation.peer_context import build_payload
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.federation.peer_context import build_payload
from robot_memory.federation.peer_context import expire_peers
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.federation.peer_context import merge_peer_payload
from robot_memory.federation.peer_context import payload_size
from robot_memory.federation.peer_context import peer_entry_id
from robot_memory.federation.peer_context import validate_payload
from robot_memory.rcan.lifecycle import reinforce
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import new_entry

UTC = dt.timezone.utc
START = dt.datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
SYNC_PERIOD_S = 60.0
FACT = 'East corridor blocked by construction barrier'
KINDS = ('hardware_observation', 'environment_note', 'behavior_pattern')


def rrn_of(index: int) -> str:
    """Return the RRN of robot ``index``."""
    return f'RRN-{index + 1:012d}'


def own_memory(index: int, entries: int, rng: random.Random) -> MemoryDocument:
    """Return a robot with ``entries`` own observations of varied confidence and age."""
    taken = set()
    items = []
    for number in range(entries):
        kind = KINDS[number % len(KINDS)]
        text = (f'Robot {index} observation {number}: sensor {rng.randrange(100)} drifts '
                f'{rng.randrange(1, 9)}% when zone {rng.randrange(20)} is busy')
        seen = START - dt.timedelta(days=rng.uniform(0.0, 8.0))
        entry = new_entry(kind, text, rng.uniform(0.35, 1.0), seen, tags=['sim'], taken=taken)
        taken.add(entry.id)
        items.append(entry)
    return MemoryDocument(rrn=rrn_of(index), last_updated=START, entries=items)


def peers_for(topology: str, robot: int, robots: int, fanout: int, rng: random.Random) -> list:
    """Return the peers ``robot`` calls this round."""
    if topology == 'mesh':
        return list(range(robot + 1, robots))
    if topology == 'ring':
        return [(robot + step) % robots for step in range(1, fanout // 2 + 1)]
    others = [other for other in range(robots) if other != robot]
    return rng.sample(others, min(fanout, len(others)))


def make_policies(robots: int, keys: pathlib.Path, max_entries: int, expiry_s: float) -> list:
    """One policy per robot: everyone allowed, signatures required, every public key known."""
    for index in range(robots):
        generate_keypair(keys / f'{index}.pem', keys / f'{index}.pub')
    public = {rrn_of(index): keys / f'{index}.pub' for index in range(robots)}
    return [FederationPolicy(allowed_peers=tuple(rrn for rrn in public if rrn != rrn_of(index)),
                             max_entries=max_entries, peer_expiry_s=expiry_s,
                             require_signatures=True, private_key_path=keys / f'{index}.pem',
                             peer_public_keys={rrn: path for rrn, path in public.items()
                                               if rrn != rrn_of(index)})
            for index in range(robots)]


def simulate(topology: str, args, policies: list) -> None:
    """Run one topology and print its round lines and summary."""
    rng = random.Random(f'{topology}-{args.robots}')
    documents = [own_memory(index, args.entries, rng) for index in range(args.robots)]
    fact_id = None
    reached_ever = set()
    rounds_to_all = None
    history = []
    sizes = []
    rounds = min(args.rounds, args.mesh_rounds) if topology == 'mesh' else args.rounds
    for number in range(1, rounds + 1):
        now = START + dt.timedelta(seconds=SYNC_PERIOD_S * number)
        began = time.perf_counter()
        for document in documents:
            # Ongoing life: a few own entries get fresh evidence each round.
            for position in rng.sample(range(len(document.entries)), 3):
                document.entries[position] = reinforce(document.entries[position], now)
        if number == 1:
            fact = new_entry('environment_note', FACT, 0.9, now, tags=['navigation'],
                             taken={entry.id for entry in documents[0].entries})
            documents[0].entries.append(fact)
            fact_id = peer_entry_id(rrn_of(0), fact.id)
        payloads = [build_payload(document, now, policies[index])
                    for index, document in enumerate(documents)]
        # The naive baseline sends the whole file as it stood at the end of the last round.
        naive = sizes if number > 1 else [len(render(document)) for document in documents]
        sync_bytes = baseline_bytes = transfers = 0
        for caller in range(args.robots):
            for callee in peers_for(topology, caller, args.robots, args.fanout, rng):
                for sender, receiver in ((caller, callee), (callee, caller)):
                    payload = payloads[sender]
                    sync_bytes += payload_size(payload)
                    baseline_bytes += naive[sender]
                    transfers += 1
                    accepted = validate_payload(payload.to_data(), policies[receiver], now,
                                                documents[receiver].rrn)
                    merge_peer_payload(documents[receiver], accepted, now, policies[receiver])
        for index, document in enumerate(documents):
            expire_peers(document, now, policies[index])
        elapsed = time.perf_counter() - began
        holding = sum(1 for document in documents[1:]
                      if any(entry.id == fact_id for block in document.peer_context or []
                             if block.rrn == rrn_of(0) for entry in block.entries))
        for index, document in enumerate(documents[1:], start=1):
            if any(block.rrn == rrn_of(0) and any(entry.id == fact_id for entry in block.entries)
                   for block in document.peer_context or []):
                reached_ever.add(index)
        if rounds_to_all is None and len(reached_ever) == args.robots - 1:
            rounds_to_all = number
        sizes = [len(render(document)) for document in documents]
        peer_entries = [sum(len(block.entries) for block in document.peer_context or [])
                        for document in documents]
        line = {'bench': 'federation_round', 'topology': topology, 'round': number,
                'robots': args.robots, 'transfers': transfers, 'sync_bytes': sync_bytes,
                'baseline_bytes': baseline_bytes,
                'ratio': round(sync_bytes / baseline_bytes, 4),
                'doc_bytes_mean': round(statistics.mean(sizes)), 'doc_bytes_max': max(sizes),
                'own_entries_max': max(len(document.entries) for document in documents),
                'peer_entries_max': max(peer_entries), 'fact_holding': holding,
                'fact_reached_ever': len(reached_ever),
                'ms': round(elapsed * 1000.0, 1)}
        history.append(line)
        print(json.dumps(line), flush=True)
    half = history[len(history) // 2:]
    summary = {'bench': 'federation_summary', 'topology': topology, 'robots': args.robots,
               'fanout': None if topology == 'mesh' else args.fanout, 'rounds': rounds,
               'own_entries': args.entries + 1, 'max_entries': args.max_entries,
               'rounds_to_all': rounds_to_all, 'fact_reached_ever': len(reached_ever),
               'peer_entries_bound': (args.robots - 1) * args.max_entries,
               'peer_entries_max': max(line['peer_entries_max'] for line in history),
               'doc_bytes_max_second_half': [min(line['doc_bytes_max'] for line in half),
                                             max(line['doc_bytes_max'] for line in half)],
               'sync_bytes_per_round_second_half': [min(line['sync_bytes'] for line in half),
                                                    max(line['sync_bytes'] for line in half)],
               'ratio_last_round': history[-1]['ratio'],
               'payload_bytes_bound_per_transfer': args.payload_bytes}
    print(json.dumps(summary), flush=True)


def main(argv=None) -> int:
    """Parse arguments, create keys in a temporary directory and run every topology."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small run for smoke tests')
    parser.add_argument('--robots', type=int, default=50)
    parser.add_argument('--rounds', type=int, default=None)
    parser.add_argument('--mesh-rounds', type=int, default=3)
    parser.add_argument('--fanout', type=int, default=4)
    parser.add_argument('--entries', type=int, default=None, help='own entries per robot')
    parser.add_argument('--max-entries', type=int, default=None, help='policy max_entries')
    parser.add_argument('--topology', choices=('ring', 'random', 'mesh'), action='append')
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (5 if args.quick else 30)
    args.entries = args.entries or (30 if args.quick else 200)
    args.max_entries = args.max_entries or (10 if args.quick else 50)
    args.mesh_rounds = 2 if args.quick else args.mesh_rounds
    args.payload_bytes = 65_536
    expiry_s = 10 * SYNC_PERIOD_S
    with tempfile.TemporaryDirectory() as keys:
        policies = make_policies(args.robots, pathlib.Path(keys), args.max_entries, expiry_s)
        for topology in args.topology or ('ring', 'random', 'mesh'):
            simulate(topology, args, policies)
    return 0


if __name__ == '__main__':
    sys.exit(main())
