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
Plots of the benchmarks whose shape matters, drawn from their stored results.

``run_all.py`` calls :func:`draw_all` each time it writes the report, from the results kept
in ``bench/results/`` (never by re-running a script), so a run of some scripts (``--only``)
redraws every plot whose script has a result, and the report always links them. Each plot
shows the figure beside the baseline the script measured in the same run.
"""

import pathlib

import matplotlib

matplotlib.use('Agg')

import matplotlib.pyplot as plt  # noqa: E402 - after choosing the Agg backend


def _records(result: dict, bench: str) -> list:
    return [record for record in result.get('records', ()) if record.get('bench') == bench]


def memory_file_scaling(result: dict):
    """Load + save time against the number of entries, ours and bare libyaml (log-log)."""
    rows = sorted(_records(result, 'load_save'), key=lambda record: record['n'])
    if len(rows) < 2:
        return None
    figure, axes = plt.subplots(figsize=(6.4, 4))
    sizes = [row['n'] for row in rows]
    axes.loglog(sizes, [row['ms'] for row in rows], 'o-', label='robot_memory load + save')
    axes.loglog(sizes, [row['baseline_ms'] for row in rows], 's--',
                label=rows[0].get('baseline', 'baseline'))
    axes.set_xlabel('entries in the file')
    axes.set_ylabel('median time (ms)')
    axes.set_title('Memory file: load + save as the file grows')
    axes.grid(True, which='both', alpha=0.3)
    axes.legend()
    return figure


def federation_bytes(result: dict):
    """Bytes on the wire per sync round, against sending whole documents, per topology."""
    rows = _records(result, 'federation_round')
    topologies = sorted({row['topology'] for row in rows})
    if not topologies:
        return None
    figure, axes = plt.subplots(figsize=(6.4, 4))
    for topology in topologies:
        mine = sorted((row for row in rows if row['topology'] == topology),
                      key=lambda row: row['round'])
        rounds = [row['round'] for row in mine]
        line, = axes.semilogy(rounds, [row['sync_bytes'] / 1e6 for row in mine], '-',
                              label=f'{topology}: robot_memory sync')
        axes.semilogy(rounds, [row['baseline_bytes'] / 1e6 for row in mine], '--',
                      color=line.get_color(), label=f'{topology}: whole documents')
    axes.set_xlabel('sync round')
    axes.set_ylabel('MB on the wire in the round (log)')
    axes.set_title('Peer federation: bytes per round')
    axes.grid(True, which='both', alpha=0.3)
    axes.legend(fontsize='small')
    return figure


def node_cpu(result: dict):
    """memory_node's share of a core beside a bare rclpy subscriber's, per load."""
    rows = _records(result, 'cpu_idle') + _records(result, 'cpu_1hz') + \
        _records(result, 'cpu_profile')
    if not rows:
        return None
    labels = [row.get('profile') or row['bench'].replace('cpu_', '') for row in rows]
    figure, axes = plt.subplots(figsize=(6.4, 4))
    places = range(len(rows))
    axes.bar([place - 0.2 for place in places], [row['share'] for row in rows], width=0.4,
             label='memory_node')
    axes.bar([place + 0.2 for place in places], [row['baseline_share'] for row in rows],
             width=0.4, label='bare rclpy subscriber')
    axes.axhline(1.0, color='red', linestyle=':', label='goal: 1% of a core')
    axes.set_xticks(list(places))
    axes.set_xticklabels(labels, rotation=20, ha='right', fontsize='small')
    axes.set_ylabel('% of one core')
    axes.set_title('memory_node CPU at idle, 1 Hz and per robot profile')
    axes.legend(fontsize='small')
    figure.tight_layout()
    return figure


def fleet_latency(result: dict):
    """Distribution of publish-to-ack latency over the fleet, beside a bare Zenoh get's."""
    rows = _records(result, 'fleet_latency_distribution')
    if not rows or not rows[0]['latencies_ms']:
        return None
    row = rows[0]
    figure, axes = plt.subplots(figsize=(6.4, 4))
    late = row.get('not_acked', 0)
    for values, label in ((row['latencies_ms'], f'payload -> fleet store ack ({late} not '
                                                'acked in time, not drawn)'),
                          (row['baseline_ms'], 'bare Zenoh get, nothing kept')):
        ordered = sorted(values)
        axes.semilogx(ordered, [(rank + 1) / len(ordered) for rank in range(len(ordered))],
                      '-', label=f'{label} ({len(ordered)})')
    axes.axvline(2000.0, color='red', linestyle=':', label='goal: p99 2 s')
    axes.axhline(0.99, color='grey', linestyle=':', linewidth=0.8)
    axes.set_xlabel('latency (ms, log)')
    axes.set_ylabel('share of deliveries at or below')
    axes.set_title("Fleet: a dream's payload to the store, through three sites")
    axes.grid(True, which='both', alpha=0.3)
    axes.legend(fontsize='x-small', loc='lower right')
    return figure


def fleet_bytes(result: dict):
    """Bytes each robot sends per robot-day when nothing changes, beside its whole file."""
    rows = _records(result, 'fleet_bytes_distribution')
    if not rows or not rows[0]['bytes']:
        return None
    row = rows[0]
    figure, axes = plt.subplots(figsize=(6.4, 4))
    places = range(len(row['bytes']))
    axes.plot(places, [value / 1000 for value in row['bytes']], '.', markersize=3,
              label='sent per robot-day (publish + delivery)')
    axes.plot(places, [value / 1000 for value in row['baseline_bytes'][:len(row['bytes'])]],
              '.', markersize=3, label='its whole robot-memory.md once')
    axes.axhline(50.0, color='red', linestyle=':', label='goal: 50 KB')
    axes.set_xlabel('robot')
    axes.set_ylabel('KB per robot-day')
    axes.set_ylim(bottom=0)
    axes.set_title('Fleet: bytes a robot sends a day when nothing changes')
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize='small')
    return figure


# (script, file name, title, caption, draw); one home for which plots the report has.
PLOTS = (
    ('bench_memory_file.py', 'memory-file-scaling.png', 'Memory file: load + save',
     'Median load + save time of the memory file as it grows, beside bare libyaml load + dump '
     'of the same data: linear, far below it.', memory_file_scaling),
    ('bench_federation.py', 'federation-bytes.png', 'Peer federation: bytes per round',
     'Bytes sent per sync round by 50 robots, beside sending whole documents: what a '
     'changed-entries sync saves as rounds go on.', federation_bytes),
    ('bench_node.py', 'node-cpu.png', 'memory_node CPU',
     "memory_node's share of a core beside a bare rclpy subscriber's taking the same messages.",
     node_cpu),
    ('bench_fleet.py', 'fleet-latency.png', 'Fleet: payload to store latency',
     'Share of dreams whose payload the fleet store acknowledged within a time, robots in '
     'three sites on loopback, beside a bare Zenoh get through the same router answered by a '
     'queryable that keeps nothing.', fleet_latency),
    ('bench_fleet.py', 'fleet-bytes.png', 'Fleet: bytes per robot-day',
     'Bytes each robot sends for one nightly dream when nothing changed (the publish and the '
     'delivery of its signed payload), beside its whole robot-memory.md.', fleet_bytes),
)


def draw_all(by_script: dict, out_dir: pathlib.Path) -> list:
    """Draw every plot whose script has a stored result; return (title, caption, path)."""
    drawn = []
    for script, name, title, caption, draw in PLOTS:
        result = by_script.get(script)
        if not result or not result.get('records'):
            continue
        figure = draw(result)
        if figure is None:
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / name
        figure.savefig(path, dpi=100)
        plt.close(figure)
        drawn.append((title, f'{caption} (`{script}`, {result.get("mode")} run of '
                      f'{result.get("started")})', path))
    return drawn
