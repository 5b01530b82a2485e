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
Plot confidence over simulated weeks for typical entries, computed by really dreaming.

One simulated robot, eight weeks, a moving clock: every evening its devices report
diagnostics, which are stored with ``EvidenceStore.add``; every night at 02:00
``autodream.dream`` runs. Three devices tell three typical stories:

* an intermittent fault: the left wheel encoder drops ticks on about two nights of three;
* a resolved fault: the right motor overheats every night for two weeks, then reports OK;
* a one-off glitch: the lidar times out once, for a few minutes, on the third night.

Each morning the effective confidence (decay applied at that moment) of each entry is read
from robot-memory.md; the plot shows it with the injection threshold, the prune threshold
and the emoji bands, and marks resolution and pruning. Nothing is drawn from a formula.

Usage: ``python bench/plot_confidence.py [--output docs/confidence-over-time.png]
[--weeks 8]``.
"""

import argparse
import datetime as dt
import pathlib
import sys
import tempfile

import matplotlib

matplotlib.use('Agg')

import matplotlib.pyplot as plt  # noqa: E402 - after choosing the Agg backend

try:
    from robot_memory.dream.autodream import dream
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig  # noqa: E402
from robot_memory.evidence.evidence_store import EvidenceStore  # noqa: E402
from robot_memory.evidence.observations import DiagnosticObservation  # noqa: E402
from robot_memory.evidence.rules import Rules  # noqa: E402
from robot_memory.rcan.lifecycle import effective_confidence  # noqa: E402
from robot_memory.rcan.memory_file import MemoryFile  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
UTC = dt.timezone.utc
T0 = dt.datetime(2026, 5, 1, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001')
STORIES = {
    'encoder': ('intermittent fault (wheel encoder, ~2 nights in 3)', '#c0392b',
                ('base: left encoder', 'wheel_left')),
    'motor': ('resolved fault (motor overheats for 2 weeks, then OK)', '#2471a3',
              ('motor: right', 'motor_right')),
    'lidar': ('one-off glitch (lidar timeout once, night 3)', '#7d8c8d', ('lidar', 'lidar0')),
}
ENCODER_QUIET_NIGHTS = {2, 5, 6, 9, 13, 16, 17, 20, 24, 27, 31, 34, 35, 38, 41, 45, 48, 52}


def evening(day: int, hour: float) -> dt.datetime:
    return T0 + dt.timedelta(days=day, hours=hour)


def night_of(day: int) -> dt.datetime:
    """02:00 after the evening of ``day``: when that night's dream runs."""
    return T0 + dt.timedelta(days=day + 1, hours=2)


def report(store, source, day, level, count, hours, message):
    for index in range(count):
        at = evening(day, 19.0) + dt.timedelta(hours=hours * index / max(1, count - 1))
        store.add(DiagnosticObservation(at, source[0], source[1], level, message))


def simulate(directory: pathlib.Path, weeks: int) -> dict:
    """Run the robot; returns per story the (moment, effective confidence, type) mornings."""
    memory = MemoryFile(directory / 'robot-memory.md')
    rules = Rules.default()
    series = {key: [] for key in STORIES}
    owners = {}
    with EvidenceStore(directory / 'robot-memory.db', rules) as store:
        for day in range(weeks * 7):
            encoder, motor, lidar = (STORIES[key][2] for key in ('encoder', 'motor', 'lidar'))
            if day not in ENCODER_QUIET_NIGHTS:
                report(store, encoder, day, 1, 60 + day % 7 * 5, 3.0, 'dropped ticks')
            else:
                report(store, encoder, day, 0, 2, 4.0, 'OK')
            if day < 14:
                report(store, motor, day, 2 if day % 3 else 1, 90, 4.0, 'temperature high')
            else:
                report(store, motor, day, 0, 3, 4.5, 'OK')
            if day == 2:
                report(store, lidar, day, 1, 3, 0.05, 'scan timeout')
            report(store, lidar, day, 0, 2, 4.0, 'OK')
            now = night_of(day)
            dream(store, memory, now, rules, CONFIG)
            for entry in memory.load(now).document.entries:
                for key, (_, _, source) in STORIES.items():
                    if entry.id == owners.get(key) or (key not in owners
                                                       and source[1] in entry.text):
                        owners[key] = entry.id
                        series[key].append((now, effective_confidence(entry, now,
                                                                      CONFIG.lifecycle),
                                            entry.type))
    return series


def draw(series: dict, output: pathlib.Path, weeks: int) -> None:
    """Return the PNG: one line per story, thresholds, bands, resolution and prune marks."""
    lc = CONFIG.lifecycle
    figure, axes = plt.subplots(figsize=(10, 5.2), dpi=120)
    end = night_of(weeks * 7)
    axes.axhspan(lc.band_high, 1.02, color='#fdecea', zorder=0)
    axes.axhspan(lc.band_medium, lc.band_high, color='#fef9e7', zorder=0)
    axes.axhspan(0, lc.band_medium, color='#eafaf1', zorder=0)
    axes.axhline(lc.inject_min, color='#555555', linestyle='--', linewidth=1)
    axes.axhline(lc.prune_min, color='#555555', linestyle=':', linewidth=1)
    axes.text(end, lc.inject_min + 0.01, f'injected into the context ≥ {lc.inject_min:.0%}',
              ha='right', va='bottom', fontsize=8, color='#333333')
    axes.text(end, lc.prune_min + 0.01, f'pruned (archived) below {lc.prune_min:.0%}',
              ha='right', va='bottom', fontsize=8, color='#333333')
    for label, low, high in (('high band', lc.band_high, 1.0),
                             ('medium band', lc.band_medium, lc.band_high),
                             ('low band', lc.inject_min, lc.band_medium)):
        axes.text(T0 + dt.timedelta(hours=12), (low + high) / 2, label, fontsize=8,
                  va='center', color='#777777')
    for key, (label, colour, _) in STORIES.items():
        points = series[key]
        if not points:
            continue
        times = [point[0] for point in points]
        values = [point[1] for point in points]
        split = next((index for index, point in enumerate(points) if point[2] == 'resolved'),
                     len(points))
        axes.plot(times[:split], values[:split], color=colour, linewidth=2, marker='o',
                  markersize=3 if len(points) > 1 else 6, label=label)
        if split < len(points):
            axes.plot(times[split - 1:], values[split - 1:], color=colour, linewidth=2,
                      linestyle='--', label='  … resolved: kept, decaying, never injected')
            resolved = points[split]
            axes.annotate('resolved: all OK for 3 days', (resolved[0], resolved[1]),
                          xytext=(12, 18), textcoords='offset points', fontsize=8,
                          color=colour, arrowprops={'arrowstyle': '->', 'color': colour})
        if times[-1] < night_of(weeks * 7 - 1):
            axes.annotate('pruned', (times[-1], values[-1]), xytext=(6, -14),
                          textcoords='offset points', fontsize=8, color=colour)
    axes.set_xlim(T0, end)
    axes.set_ylim(0, 1.02)
    axes.set_ylabel('effective confidence (decay applied each morning)')
    axes.set_xlabel('simulated date (one dream every night at 02:00 UTC)')
    axes.set_title('Confidence over simulated weeks: ingest + autodream with a moving clock')
    axes.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f'{value:.0%}'))
    axes.legend(loc='center right', fontsize=8, framealpha=0.95)
    figure.autofmt_xdate()
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output)
    plt.close(figure)


def main(argv=None) -> int:
    """Simulate, draw, and print one JSON-free line saying where the PNG went."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split('\n', 1)[0])
    parser.add_argument('--output', default=str(REPO / 'docs' / 'confidence-over-time.png'),
                        help='PNG to write')
    parser.add_argument('--weeks', type=int, default=8, help='simulated weeks (default 8)')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        series = simulate(pathlib.Path(directory), args.weeks)
    draw(series, pathlib.Path(args.output), args.weeks)
    print(f'wrote {args.output}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
