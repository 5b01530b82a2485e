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
The ``robot-memory`` command line.

Show, validate, stats, prune, export, file resolution, exit codes (0 ok, 1 a memory
problem, 2 a usage error) and help text on every option.
"""

import argparse
import io
import json
import subprocess
import sys

import pytest

from robot_memory.cli import main as cli
from robot_memory.common.timeutil import parse_iso
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan import memory_file
from robot_memory.rcan.context import estimate_tokens
from robot_memory.rcan.context import recent_header
from robot_memory.rcan.context_fill import LEFT_OUT_RESERVE
from robot_memory.rcan.memory_file import ENV_VAR
from robot_memory.rcan.memory_file import side_file
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.untrusted import HEADER
from support.cli import run
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.paths import REPO
from support.processes import child_env
from support.samples import AT
from support.samples import MEMORY

# The block's header costs this much of a budget (issue 38, point 6), and the room kept for
# its last line, which names what the budget left out (point 5).
HEAD_COST = estimate_tokens(HEADER) + 1 + LEFT_OUT_RESERVE


@pytest.fixture
def memory(tmp_path, monkeypatch):
    """Return a memory file with entries in every band, a resolved one, a weak one and a peer."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    path = tmp_path / 'robot-memory.md'
    path.write_text(MEMORY, encoding='utf-8')
    return path


# ------------------------------------------------------------------------------ show

def test_show_prints_the_banded_block_own_entries_first_then_peers(memory, capsys):
    code, out, _ = run(capsys, 'show', '--file', memory, '--at', AT)
    assert code == 0
    header, *lines = out.splitlines()
    assert header == HEADER  # issue 38, point 6: the block opens with its framing
    assert lines[:3] == ['🔴 [92%] Left wheel encoder intermittent',
                         '🟡 [65%] Kitchen doorway has 3cm lip',
                         '🟢 [35%] Prefer the east corridor after dark']
    # mem-weak (5%) was reinforced today: shown in its own labelled section, after them
    assert lines[3:6] == ['', recent_header(), '🟢 [5%] Hallway lamp flickers']
    assert 'RRN-000000000005' in lines[7]
    assert lines[8] == '🟡 [75%] Alex reports east corridor blocked by construction barrier'
    assert 'Battery' not in out


def test_show_at_evaluates_decay_at_that_moment(memory, capsys):
    code, out, _ = run(capsys, 'show', '--file', memory, '--at', '2026-04-03T02:00:00Z',
                       '--no-peers')
    assert code == 0
    assert out.splitlines() == [HEADER, '🔴 [82%] Left wheel encoder intermittent',
                                '🟡 [55%] Kitchen doorway has 3cm lip']


def test_show_no_peers_leaves_the_peer_section_out(memory, capsys):
    _, out, _ = run(capsys, 'show', '--file', memory, '--at', AT, '--no-peers')
    assert 'RRN-000000000005' not in out and 'Alex' not in out
    assert len(out.splitlines()) == 7  # the header and six lines


def test_show_budget_cuts_the_block_and_says_how_many_were_left_out(memory, capsys):
    budget = 12 + HEAD_COST
    code, out, err = run(capsys, 'show', '--file', memory, '--at', AT, '--budget', budget)
    assert code == 0
    assert out.splitlines()[:3] == [HEADER, '🔴 [92%] Left wheel encoder intermittent', '']
    assert out.splitlines()[3].startswith('Left out for the budget: ')
    assert estimate_tokens(out.rstrip('\n')) <= budget
    assert '4 omitted by the budget' in err  # the weak recent entry counts too
    assert '1 below the 30% injection threshold, the highest 5%: Hallway lamp flickers' in err


def test_show_min_confidence_raises_the_threshold(memory, capsys):
    _, out, _ = run(capsys, 'show', '--file', memory, '--at', AT, '--min-confidence', 0.7)
    assert [line[:1] for line in out.splitlines() if line.startswith(('🔴', '🟡', '🟢'))] == [
        '🔴', '🟡']
    assert 'Kitchen' not in out


def test_show_budget_15_keeps_the_highest_entry_and_says_what_it_left_out(memory, capsys):
    """Check that ``--budget 15`` keeps the 🔴 92% entry rather than a 🟡 65% one that fits."""
    text = memory.read_text(encoding='utf-8').replace(
        '"Left wheel encoder intermittent"',
        '"Left wheel encoder intermittent under load, prefer 0.3 m/s"')
    memory.write_text(text, encoding='utf-8')
    code, out, err = run(capsys, 'show', '--file', memory, '--at', AT, '--budget',
                         15 + HEAD_COST)
    assert code == 0
    header, line, _, left_out = out.splitlines()
    assert header == HEADER and left_out.startswith('Left out for the budget: ')
    assert line.startswith('🔴 [92%] Left wheel encoder intermittent') and line.endswith('…')
    assert estimate_tokens(line) <= 15
    assert '4 omitted by the budget (the last line cut)' in err


def test_show_query_puts_the_entries_of_the_task_first_and_names_them(
        memory, capsys, monkeypatch):
    """Issue 38, point 4: ``--query`` lifts the relevant entries; red ones are never dropped."""
    # Keywords only, so the test does not depend on the semantic model being installed (its
    # cosine floor lets "teleport" reach "corridor"); vectors: test_context_query.py.
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'off')
    _, plain, _ = run(capsys, 'show', '--file', memory, '--at', AT, '--no-peers')
    code, out, err = run(capsys, 'show', '--file', memory, '--at', AT, '--no-peers',
                         '--query', 'drive to the east corridor tonight')
    assert code == 0
    assert out.splitlines()[1:4] == ['🟢 [35%] Prefer the east corridor after dark',
                                     '🔴 [92%] Left wheel encoder intermittent',
                                     '🟡 [65%] Kitchen doorway has 3cm lip']
    assert '1 chosen for the query (mem-low)' in err
    # Room for the red line only: the relevant green one is not lifted past it.
    code, out, err = run(capsys, 'show', '--file', memory, '--at', AT, '--no-peers',
                         '--budget', 12 + HEAD_COST, '--query', 'east corridor')
    assert out.splitlines()[:2] == [HEADER, '🔴 [92%] Left wheel encoder intermittent']
    assert 'chosen for the query' not in err
    # No word in common: the block as without a query; a blank query is no query.
    for query in ('teleport', '  '):
        _, out, _ = run(capsys, 'show', '--file', memory, '--at', AT, '--no-peers',
                        '--query', query)
        assert out == plain
    code, out, err = run(capsys, 'show', '--file', memory, '--at', AT, '--query', 'x' * 4001)
    assert code == 1 and out == '' and 'limit is 4000' in err


def test_show_tells_why_a_weak_entry_is_not_injected(memory, capsys):
    """Check that show says how many entries are below the threshold, and the highest."""
    _, out, err = run(capsys, 'show', '--file', memory, '--at', '2026-04-05T02:00:00Z')
    assert 'Hallway' not in out  # 4 days on: neither injected nor recent
    assert ('2 below the 30% injection threshold, the highest 15%: Prefer the east corridor '
            'after dark (mem-low)') in err


def test_cli_output_shows_bidi_and_control_characters_as_escapes(memory, capsys):
    """Check that a U+202E reaches neither the brain nor the terminal unescaped."""
    text = memory.read_text(encoding='utf-8').replace(
        '"Kitchen doorway has 3cm lip"', '"Kitchen \u202edoorway\u202c lip"')
    memory.write_text(text, encoding='utf-8')
    _, out, err = run(capsys, 'show', '--file', memory, '--at', AT)
    assert '🟡 [65%] Kitchen \\u202edoorway\\u202c lip' in out.splitlines()
    assert '\u202e' not in out + err
    _, out, _ = run(capsys, 'export', '--file', memory, '--at', AT)
    assert '\u202e' not in out
    exported = {entry['id']: entry['text'] for entry in json.loads(out)['entries']}
    assert exported['mem-mid'] == 'Kitchen \u202edoorway\u202c lip'  # JSON keeps the data
    assert memory.read_text(encoding='utf-8') == text  # the file keeps what was written


def test_show_of_a_missing_file_exits_1_with_advice(tmp_path, capsys):
    code, out, err = run(capsys, 'show', '--file', tmp_path / 'none.md')
    assert code == 1 and out == ''
    assert 'none.md' in err and 'no memory file here yet' in err


# -------------------------------------------------------------------------- validate

def test_validate_exits_0_for_a_valid_file(memory, capsys):
    code, out, _ = run(capsys, 'validate', '--file', memory)
    assert code == 0
    assert out == f'{memory}: valid (schema 1.0, 5 entries, 1 peer blocks)\n'


def test_the_example_file_validates(capsys):
    code, out, _ = run(capsys, 'validate', '--file', REPO / 'examples' / 'robot-memory.md')
    assert code == 0 and ': valid (' in out


def test_validate_prints_one_path_line_problem_per_problem_and_exits_1(memory, capsys):
    text = MEMORY.replace('confidence: 0.65', 'confidence: 1.65').replace(
        'observation_count: 2}', 'observation_count: 0}')
    memory.write_text(text, encoding='utf-8')
    before = memory.read_bytes()
    code, out, _ = run(capsys, 'validate', '--file', memory)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 2
    mid_line = text.splitlines().index('  - {id: mem-mid, type: environment_note, '
                                       'text: "Kitchen doorway has 3cm lip",') + 1
    low_line = mid_line + 3
    assert lines[0].startswith(f'{memory}:{mid_line}: entries[1] quarantined: confidence')
    assert lines[1].startswith(f'{memory}:{low_line}: entries[2] quarantined: observation_count')
    assert memory.read_bytes() == before
    assert not side_file(memory, '.quarantine.jsonl').exists()


def test_validate_of_an_unreadable_file_names_the_line_and_exits_1(memory, capsys):
    memory.write_text('---\nschema_version: "1.0"\nrrn: [unclosed\nlast_updated: x: y\n---\n',
                      encoding='utf-8')
    code, out, _ = run(capsys, 'validate', '--file', memory)
    assert code == 1
    [line] = out.splitlines()
    assert line.startswith(f'{memory}:4: front matter is not valid YAML')


# ----------------------------------------------------------------------------- stats

def test_stats_json_counts_by_type_and_band(memory, capsys):
    code, out, _ = run(capsys, 'stats', '--file', memory, '--at', AT, '--json')
    assert code == 0
    stats = json.loads(out)
    assert stats['rrn'] == 'RRN-000000000001' and stats['entries'] == 5
    assert stats['by_type'] == {'hardware_observation': 1, 'environment_note': 2,
                                'behavior_pattern': 1, 'resolved': 1}
    assert stats['by_band'] == {'high': 1, 'medium': 1, 'low': 1, 'below_threshold': 1}
    assert stats['prunable'] == 1
    assert stats['peers'] == {'RRN-000000000005': {'entries': 1,
                                                   'last_synced': '2026-04-01T02:00:00Z'}}
    assert stats['file'] == str(memory) and stats['file_bytes'] == memory.stat().st_size


def test_stats_at_a_later_moment_sees_decay(memory, capsys):
    _, out, _ = run(capsys, 'stats', '--file', memory, '--at', '2026-04-11T02:00:00Z', '--json')
    stats = json.loads(out)
    assert stats['by_band'] == {'high': 0, 'medium': 0, 'low': 1, 'below_threshold': 3}
    assert stats['prunable'] == 2


def test_stats_prints_a_human_summary(memory, capsys):
    code, out, _ = run(capsys, 'stats', '--file', memory, '--at', AT)
    assert code == 0
    assert '🔴 1  🟡 1  🟢 1  below threshold 1  prunable 1' in out
    assert 'peer RRN-000000000005: 1 entry' in out


# ----------------------------------------------------------------------------- prune

# A day and an hour after the sample's reinforcements: past the "Seen in the last 24 h".
LATER = '2026-04-02T03:00:00Z'


def test_prune_spares_an_entry_seen_within_recent_hours(memory, capsys):
    """Issue 26.6: mem-weak (5%) was seen today; the block promises it, so it stays."""
    code, out, _ = run(capsys, 'prune', '--file', memory, '--at', AT, '--verbose')
    assert code == 0 and 'mem-weak' not in out and '5 remain' in out, out
    assert not side_file(memory, '.archive.jsonl').exists()


def test_prune_archives_then_removes_entries_below_ten_percent(memory, capsys):
    code, out, _ = run(capsys, 'prune', '--file', memory, '--at', LATER, '--verbose')
    assert code == 0
    assert out.splitlines() == [
        'pruned mem-weak [0%] Hallway lamp flickers',
        'pruned 1 entry (archived in robot-memory.md.archive.jsonl); 4 remain']
    archive = side_file(memory, '.archive.jsonl')
    [record] = [json.loads(line) for line in archive.read_text().splitlines()]
    assert record['entry']['id'] == 'mem-weak' and record['archived_at'] == LATER
    _, shown, _ = run(capsys, 'export', '--file', memory, '--at', LATER)
    assert [entry['id'] for entry in json.loads(shown)['entries']] == [
        'mem-high', 'mem-mid', 'mem-low', 'mem-done']
    assert memory.read_text(encoding='utf-8').endswith('\n# Notes\n')


def test_prune_dry_run_changes_nothing(memory, capsys):
    before = memory.read_bytes()
    code, out, _ = run(capsys, 'prune', '--file', memory, '--at', LATER, '--dry-run',
                       '--verbose')
    assert code == 0
    assert 'would prune mem-weak' in out and 'would prune 1 entry; 4 remain' in out
    assert memory.read_bytes() == before
    assert not side_file(memory, '.archive.jsonl').exists()


def test_prune_at_a_far_future_moment_holds_entries_back(memory, capsys):
    code, out, _ = run(capsys, 'prune', '--file', memory, '--at', '2030-01-01T00:00:00Z')
    assert code == 0
    assert out.splitlines() == ['pruned 2 entries (archived in robot-memory.md.archive.jsonl); '
                                '3 remain; 3 held back for a later prune (max_prune_fraction)']
    archived = side_file(memory, '.archive.jsonl').read_text().splitlines()
    assert len(archived) == 2


def test_prune_prints_one_line_for_thousands_of_entries_and_lists_them_when_verbose(
        tmp_path, capsys):
    weak = [new_entry('environment_note', f'faded note {index}', 0.05,
                      parse_iso(AT)) for index in range(3000)]
    for verbose in (False, True):
        path = tmp_path / f'verbose-{verbose}' / 'robot-memory.md'
        path.parent.mkdir()
        document = memory_file.new_document('RRN-000000000001', parse_iso(AT))
        document.entries = list(weak)
        path.write_bytes(memory_file.render(document))
        code, out, _ = run(capsys, 'prune', '--file', path, '--at', LATER, '--dry-run',
                           *(['--verbose'] if verbose else []))
        assert code == 0
        lines = out.splitlines()
        assert lines[-1] == ('would prune 1500 entries; 1500 remain; 1500 held back for a '
                             'later prune (max_prune_fraction)')
        assert len(lines) == (1501 if verbose else 1)


def test_prune_of_a_missing_file_exits_1_and_creates_nothing(tmp_path, capsys):
    missing = tmp_path / 'typo.md'
    for extra in ([], ['--dry-run']):
        code, out, err = run(capsys, 'prune', '--file', missing, *extra)
        assert code == 1 and out == ''
        assert 'typo.md' in err
    assert list(tmp_path.iterdir()) == []


def dreamt_once(directory):
    """Return a robot whose first dream made one entry from an encoder fault; (robot, entry id)."""
    robot = Robot(directory)
    robot.fault(0)
    created = robot.dream(0).created
    robot.close()
    assert len(created) == 1
    return robot, created[0]


def test_a_cli_prune_is_audited_and_not_taken_for_a_manual_deletion(tmp_path, capsys):
    robot, entry_id = dreamt_once(tmp_path / 'robot')
    text = robot.entries(0)[entry_id].text
    code, out, err = run(capsys, 'prune', '--file', robot.memory.path, '--at',
                         morning(10).isoformat(), '--verbose')
    assert code == 0, err
    assert f'pruned {entry_id}' in out and robot.entries(10) == {}
    with EvidenceStore(robot.store.path) as store:
        record = store.history(entry_id)[-1]
        assert entry_id not in store.snapshot()
    assert (record.action, record.actor) == ('prune', 'cli')
    assert 'below prune_min' in record.reason and record.detail['text'] == text

    # The fault comes back: the next dream creates the entry again instead of muting
    # its signature as if a person had deleted it.
    robot = Robot(tmp_path / 'robot')
    robot.fault(11)
    report = robot.dream(11)
    robot.close()
    assert report.manual == [] and len(report.created) == 1, report.to_dict()
    assert [entry.text for entry in robot.entries(11).values()] == [text]


def test_a_prune_interrupted_after_writing_the_file_is_completed_by_the_next_dream(
        tmp_path, capsys, monkeypatch):
    robot, entry_id = dreamt_once(tmp_path / 'robot')

    def killed(self, payload):
        raise KeyboardInterrupt('killed between the file write and the database commit')

    monkeypatch.setattr(EvidenceStore, 'commit_dream', killed)
    with pytest.raises(KeyboardInterrupt):
        cli.main(['prune', '--file', str(robot.memory.path), '--at', morning(10).isoformat()])
    monkeypatch.undo()
    assert robot.entries(10) == {}

    robot = Robot(tmp_path / 'robot')
    robot.fault(11)
    report = robot.dream(11)
    assert report.recovered == 'completed' and report.manual == []
    assert len(report.created) == 1
    actions = [(record.action, record.actor) for record in robot.store.history(entry_id)]
    assert actions[:2] == [('create', 'autodream'), ('prune', 'cli')], actions
    robot.close()


def test_a_prune_that_could_not_write_the_file_leaves_no_trace_in_the_audit(
        tmp_path, capsys, monkeypatch):
    robot, entry_id = dreamt_once(tmp_path / 'robot')
    before = robot.memory.path.read_bytes()

    def full(path, data, mode=0o600):
        raise MemoryFileError('write failed (No space left on device); the previous file is '
                              'intact', path)

    monkeypatch.setattr(memory_file, 'write_atomic', full)
    code, _, err = run(capsys, 'prune', '--file', robot.memory.path, '--at',
                       morning(10).isoformat())
    monkeypatch.undo()
    assert code == 1 and 'No space left' in err
    assert robot.memory.path.read_bytes() == before

    robot = Robot(tmp_path / 'robot')
    report = robot.dream(1)
    assert report.recovered == 'discarded' and report.manual == []
    assert set(robot.entries(1)) == {entry_id}
    assert 'prune' not in [record.action for record in robot.store.history(entry_id)]
    robot.close()


def test_prune_dry_run_opens_no_database(memory, capsys):
    code, _, _ = run(capsys, 'prune', '--file', memory, '--at', AT, '--dry-run')
    assert code == 0 and not memory.with_name('robot-memory.db').exists()


# ---------------------------------------------------------------------------- export

def test_export_json_has_every_entry_with_its_effective_confidence(memory, capsys):
    code, out, _ = run(capsys, 'export', '--file', memory, '--format', 'json',
                       '--at', '2026-04-02T02:00:00Z')
    assert code == 0
    data = json.loads(out)
    assert data['schema_version'] == '1.0' and data['rrn'] == 'RRN-000000000001'
    assert data['evaluated_at'] == '2026-04-02T02:00:00Z'
    entries = {entry['id']: entry for entry in data['entries']}
    assert set(entries) == {'mem-high', 'mem-mid', 'mem-low', 'mem-weak', 'mem-done'}
    assert entries['mem-high']['confidence'] == 0.92
    assert entries['mem-high']['effective_confidence'] == pytest.approx(0.87)
    assert entries['mem-weak']['effective_confidence'] == 0.0
    [peer] = data['peer_context']
    assert peer['entries'][0]['effective_confidence'] == pytest.approx(0.70)


# ------------------------------------------------------------------- file resolution

def test_file_option_beats_the_environment_which_beats_the_home_default(tmp_path, monkeypatch,
                                                                        capsys):
    home = tmp_path / 'home'
    default = home / '.opencastor' / 'robot-memory.md'
    from_env = tmp_path / 'env.md'
    from_option = tmp_path / 'option.md'
    for path, rrn in ((default, 'RRN-HOME'), (from_env, 'RRN-ENV'), (from_option, 'RRN-OPT')):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MEMORY.replace('RRN-000000000001', rrn), encoding='utf-8')
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.setenv(ENV_VAR, str(from_env))

    def rrn_used(*extra):
        code, out, _ = run(capsys, 'stats', '--json', *extra)
        assert code == 0
        return json.loads(out)['rrn']

    assert rrn_used('--file', from_option) == 'RRN-OPT'
    assert rrn_used() == 'RRN-ENV'
    monkeypatch.delenv(ENV_VAR)
    assert rrn_used() == 'RRN-HOME'
    monkeypatch.setenv(ENV_VAR, '')
    assert rrn_used() == 'RRN-HOME'


# ------------------------------------------------------------------------ usage errors

@pytest.mark.parametrize('argv', [
    [],
    ['no-such-command'],
    ['show', '--budget', '0'],
    ['show', '--budget', 'many'],
    ['show', '--at', 'yesterday'],
    ['show', '--min-confidence', '1.5'],
    ['export', '--format', 'xml'],
    ['stats', '--unknown-option'],
])
def test_a_usage_error_exits_2(argv, memory, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(argv + ['--file', str(memory)] if argv else argv)
    assert caught.value.code == 2
    assert 'usage: robot-memory' in capsys.readouterr().err


def test_the_module_runs_as_a_command_with_its_exit_codes(memory):
    env = child_env()
    valid = subprocess.run([sys.executable, '-m', 'robot_memory.cli.main', 'validate', '--file',
                            str(memory)], env=env, capture_output=True, text=True, timeout=60)
    assert valid.returncode == 0, valid.stderr
    assert valid.stdout.startswith(f'{memory}: valid')
    usage = subprocess.run([sys.executable, '-m', 'robot_memory.cli.main', 'show', '--budget',
                            '-3'], env=env, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and 'must be at least 1' in usage.stderr


# -------------------------------------------------------------------------- help text

def _walk(parser, path=('robot-memory',)):
    """Every (command path, parser) reachable from ``parser``, sub-commands included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield path + (name,), helps.get(name)
                yield from _walk(child, path + (name,))


def test_every_command_and_every_option_has_help_text():
    missing = []
    commands = 0
    for path, item in _walk(cli.build_parser()):
        if not isinstance(item, argparse.ArgumentParser):
            commands += 1
            if not item or not item.strip():
                missing.append(' '.join(path))
            continue
        for action in item._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if action.help is argparse.SUPPRESS:
                continue
            if not action.help or not str(action.help).strip():
                name = '/'.join(action.option_strings) or action.dest
                missing.append(f'{" ".join(path)} {name}')
    assert commands >= 8
    assert missing == []


@pytest.mark.parametrize('argv', [['ingest', '-'], ['dream'], ['prune'],
                                  ['learn', 'The dock is in the hall'], ['recall', 'dock']])
def test_a_writer_refuses_a_file_in_a_directory_that_does_not_exist(tmp_path, capsys,
                                                                    monkeypatch, argv):
    # A mistyped --file kept evidence in a new directory's memory nobody reads.
    monkeypatch.setattr('sys.stdin', io.StringIO(''))
    missing = tmp_path / 'typo-dir' / 'robot-memory.md'
    code, out, err = run(capsys, argv[0], '--file', missing, *argv[1:])
    assert code == 1, (out, err)
    assert f'{missing.parent} does not exist' in err and 'check --file' in err, err
    assert not missing.parent.exists()
    code, out, err = run(capsys, argv[0], '--file', tmp_path / 'robot-memory.md',
                         '--db', tmp_path / 'nowhere' / 'evidence.db', *argv[1:])
    assert code == 1 and 'check --db' in err, (out, err)
    assert not (tmp_path / 'nowhere').exists()
