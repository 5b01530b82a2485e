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

"""The substrate's CLI commands, RLM-MEM import/export and the recall benchmark's smoke run."""

import json
import math
import sqlite3
import subprocess
import sys

import pytest

from robot_memory.cli import main as cli
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from robot_memory.substrate.rlm import check_chunk_id
from robot_memory.substrate.rlm import export_chunks
from robot_memory.substrate.rlm import import_chunks
from support.cli import run
from support.paths import REPO
from support.processes import child_env
from support.samples import DAY
from support.samples import NOW

AT = '2026-04-01T12:00:00Z'


def test_learn_recall_forget_from_the_command_line(tmp_path, capsys):
    memory = str(tmp_path / 'robot-memory.md')
    code, out, _ = run(capsys, 'learn', 'The charging dock is in the hallway', '--file', memory,
                       '--context', '{"battery": 0.1}', '--tag', 'dock', '--at', AT)
    assert code == 0 and out.startswith('created semantic ')
    code, out, _ = run(capsys, 'learn', 'the charging dock is in the hallway', '--file', memory,
                       '--json', '--at', AT)
    assert json.loads(out)['action'] == 'reinforced'
    code, out, _ = run(capsys, 'recall', 'charging dock', '--file', memory, '--json',
                       '--filter', '{"context.battery": {"$lt": 0.2}}', '--at', AT)
    result = json.loads(out)
    assert code == 0 and result['hits'][0]['tags'] == ['dock']
    code, out, _ = run(capsys, 'recall', 'dock', '--file', memory, '--vectors', '--at', AT)
    assert code == 0 and 'The charging dock is in the hallway' in out
    code, _, err = run(capsys, 'recall', '  ', '--file', memory)
    assert code == 1 and 'query is empty' in err
    code, out, _ = run(capsys, 'forget', 'charging dock', '--reason', 'moved', '--file', memory)
    assert code == 0 and out.startswith('archived ')
    code, _, err = run(capsys, 'recall', 'dock', '--file', memory)
    assert code == 1 and 'no records matched' in err
    with Substrate(tmp_path / 'robot-memory.db') as substrate:
        assert substrate.metrics(NOW)['by_status'] == {'archived': 1}


def test_forget_takes_the_best_match_shows_a_dry_run_and_restores(tmp_path, capsys):
    memory = str(tmp_path / 'robot-memory.md')
    ids = {}
    for text in ('The charging dock is in the hallway',
                 'Never block the fire exit with the dock trolley'):
        code, out, _ = run(capsys, 'learn', text, '--file', memory, '--json', '--at', AT)
        ids[text] = json.loads(out)['record_id']
    dock, warning = ids.values()
    code, out, err = run(capsys, 'forget', 'dock', '--reason', 'moved', '--dry-run',
                         '--file', memory, '--at', AT)
    assert code == 0 and out.count('would archive') == 1 and 'best of 2 matches' in err
    code, out, err = run(capsys, 'forget', 'charging dock', '--reason', 'moved', '--file',
                         memory, '--at', AT)
    assert code == 0 and out.startswith(f'archived {dock}') and 'hallway' in out
    code, out, _ = run(capsys, 'recall', 'fire exit dock', '--file', memory, '--json')
    assert [hit['id'] for hit in json.loads(out)['hits']] == [warning]
    code, _, err = run(capsys, 'forget', 'charging dock', '--reason', 'again', '--file', memory)
    assert code == 1 and 'no live record matches query' in err
    code, out, _ = run(capsys, 'forget', dock, '--reason', 'mistake', '--restore', '--json',
                       '--file', memory)
    assert code == 0 and json.loads(out)['records'][0]['status'] == 'active'
    code, out, _ = run(capsys, 'forget', 'dock', '--reason', 'all of it', '--all', '--file',
                       memory)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ['archived'] * 2
    code, _, err = run(capsys, 'forget', 'x' * 4001, '--reason', 'x', '--file', memory)
    assert code == 1 and 'target is 4001 characters; the limit is 4000' in err


def test_learn_takes_a_cardinality_hint(tmp_path, capsys):
    memory = str(tmp_path / 'robot-memory.md')
    run(capsys, 'learn', 'The shift lead is Dana', '--file', memory, '--multi-valued')
    code, out, _ = run(capsys, 'learn', 'The shift lead is Sam', '--file', memory, '--json')
    assert code == 0 and json.loads(out)['action'] == 'created'
    run(capsys, 'learn', 'The lift is slow', '--file', memory)
    run(capsys, 'learn', 'The lift is fast', '--file', memory)
    code, out, _ = run(capsys, 'recall', 'lift', '--file', memory)
    # (with the semantic model, recall may also list nearby records, e.g. the shift leads)
    assert code == 0 and [line.endswith('[contested]') for line in out.splitlines()
                          if 'lift' in line] == [True, True]
    run(capsys, 'learn', 'The night porter is Ali', '--file', memory, '--single-valued')
    code, out, _ = run(capsys, 'learn', 'The night porter is Bo', '--file', memory, '--json',
                       '--single-valued')
    assert code == 0 and json.loads(out)['action'] == 'superseded'


def test_stats_include_substrate_metrics(tmp_path, capsys):
    from support.samples import SPEC_EXAMPLE
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(SPEC_EXAMPLE, encoding='utf-8')
    code, out, _ = run(capsys, 'stats', '--file', str(memory), '--json')
    assert code == 0 and json.loads(out)['substrate'] is None
    assert not (tmp_path / 'robot-memory.db').exists()
    run(capsys, 'learn', 'The lift is slow', '--file', str(memory))
    code, out, _ = run(capsys, 'stats', '--file', str(memory), '--json')
    assert json.loads(out)['substrate']['by_type']['semantic'] == 1
    code, out, _ = run(capsys, 'stats', '--file', str(memory))
    assert 'substrate records: 1' in out


def test_every_substrate_command_and_option_has_help():
    parser = cli.build_parser()
    commands = next(action for action in parser._actions if action.dest == 'command')
    for name in ('learn', 'recall', 'forget', 'mcp', 'import-rlm', 'export-rlm'):
        assert cli.COMMANDS[name].__doc__
        for action in commands.choices[name]._actions:
            assert action.help, f'{name} {action.dest} has no help text'


def test_rlm_chunks_round_trip_with_links(tmp_path):
    with Substrate(tmp_path / 'a.db') as source:
        dock = source.learn('The charging dock is in the hallway', now=NOW, tags=['dock'],
                            context={'conversation_id': 'conv-1'}).record_id
        proof = source.learn('At 09:00 the robot docked in the hallway', now=NOW).record_id
        source.relate(proof, 'supports', dock, NOW)
        gone = source.learn('The old dock was in the garage', now=NOW).record_id
        source.forget(gone, 'obsolete', NOW)
        report = export_chunks(source, tmp_path / 'rlm', NOW)
    assert len(report.written) == 3 and report.archived == 1
    files = sorted((tmp_path / 'rlm' / 'chunks').glob('*/*.json'))
    assert len(files) == 2 and len(list((tmp_path / 'rlm' / 'archive').glob('*.json'))) == 1
    chunks = {json.loads(path.read_text())['content']: json.loads(path.read_text())
              for path in files}
    fact = chunks['The charging dock is in the hallway']
    assert fact['type'] == 'fact' and fact['links']['context_of'] == ['conv-1']
    assert set(fact) >= {'id', 'content', 'tokens', 'type', 'metadata', 'links', 'tags'}
    event = chunks['At 09:00 the robot docked in the hallway']
    assert event['links']['supports'] == [fact['id']]
    assert json.loads((tmp_path / 'rlm' / 'index' / 'tag_index.json').read_text()) == {
        'dock': [fact['id']]}
    with Substrate(tmp_path / 'b.db') as target:
        imported = import_chunks(target, tmp_path / 'rlm', NOW + DAY)
        assert len(imported.imported) == 3 and imported.links == 1 and not imported.refused
        assert target.get(dock).text == 'The charging dock is in the hallway'
        assert target.get(proof).relations[0].predicate == 'supports'
        assert target.get(gone).status == 'archived'
        again = import_chunks(target, tmp_path / 'rlm', NOW + DAY)
        assert len(again.duplicates) == 3 and not again.imported


def test_a_superseded_fact_imported_after_its_successor_keeps_both(tmp_path):
    with Substrate(tmp_path / 'a.db') as source:
        old = source.learn('The dock is in the hallway', now=NOW, type='semantic').record_id
        new = source.supersede(old, NOW, 'moved', text='The dock is in the kitchen').created[0]
        export_chunks(source, tmp_path / 'rlm', NOW)
    # The successor's chunk first: the superseded fact must not pass through 'active'.
    files = sorted((tmp_path / 'rlm' / 'chunks').glob('*/*.json'),
                   key=lambda path: new[:8] not in path.name)
    ordered = tmp_path / 'ordered' / 'chunks' / '2026-04'
    ordered.mkdir(parents=True)
    for index, path in enumerate(files):
        (ordered / f'{index}-{path.name}').write_bytes(path.read_bytes())
    with Substrate(tmp_path / 'b.db') as target:
        report = import_chunks(target, tmp_path / 'ordered', NOW + DAY)
        assert sorted(report.imported) == sorted(path.name[:-5] for path in files), report
        assert not report.refused and not report.contested
        assert (target.get(old).status, target.get(new).status) == ('superseded', 'active')
        assert [hit.id for hit in target.recall('dock', now=NOW + DAY).hits] == [new]


def test_plain_rlm_chunks_are_mapped_by_type(tmp_path):
    directory = tmp_path / 'brain' / 'chunks' / '2026-02'
    directory.mkdir(parents=True)
    chunks = [
        {'id': 'chunk-2026-02-10-a1b2c3d4', 'content': 'User prefers Python over JavaScript',
         'tokens': 12, 'type': 'preference',
         'metadata': {'created': '2026-02-10T21:37:00Z', 'conversation_id': 'conv-123',
                      'source': 'interaction', 'confidence': 0.95, 'access_count': 3},
         'links': {'context_of': ['conv-123'], 'related_to': ['chunk-2026-02-10-b1b2c3d4']},
         'tags': ['coding']},
        {'id': 'chunk-2026-02-10-b1b2c3d4', 'content': 'Decided to use RLM instead of RAG',
         'tokens': 9, 'type': 'decision', 'metadata': {'created': '2026-02-10T21:40:00Z'},
         'links': {}},
        {'id': '../../etc/passwd', 'content': 'x', 'tokens': 1, 'type': 'note',
         'metadata': {}, 'links': {}},
    ]
    for index, chunk in enumerate(chunks):
        (directory / f'chunk-{index}.json').write_text(json.dumps(chunk))
    (directory / 'chunk-broken.json').write_text('{not json')
    with Substrate(tmp_path / 'c.db') as target:
        report = import_chunks(target, tmp_path / 'brain', NOW)
        assert len(report.imported) == 2 and report.links == 1
        assert len(report.refused) == 2
        assert any('path separator' in problem for problem in report.refused)
        hit = target.recall('python', now=NOW).hits[0]
        assert hit.payload['predicate'] == 'prefers'
        assert hit.context == {'conversation_id': 'conv-123'} and hit.tags == ['coding']


@pytest.mark.parametrize('bad, message', [
    ('../x', 'path separator'), ('..', '".."'), ('/etc/passwd', 'path separator'),
    ('a\x00b', 'NUL'), ('a\\b', 'path separator'), ('C:evil', 'absolute'), ('', 'non-empty'),
    ('chunk id', 'characters outside'),
])
def test_chunk_ids_are_checked_against_path_traversal(bad, message):
    with pytest.raises(SubstrateError, match=message):
        check_chunk_id(bad)
    assert check_chunk_id('chunk-2026-02-10-a1b2c3d4') == 'chunk-2026-02-10-a1b2c3d4'


def test_recall_benchmark_quick_run_prints_json_lines():
    env = child_env()
    run = subprocess.run([sys.executable, str(REPO / 'bench' / 'bench_recall.py'), '--quick'],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    keyword = [record for record in records if record['bench'] == 'recall_keyword']
    assert len(keyword) == 1 and keyword[0]['n'] == 1000
    assert {'p50_ms', 'p99_ms', 'baseline_p50_ms', 'ratio', 'goal'} <= set(keyword[0])
    assert keyword[0]['p99_ms'] >= keyword[0]['p50_ms'] > 0
    for record in records:
        if record['bench'] in ('recall_hybrid', 'learn_rate'):
            assert record['n'] == 1000 and record['met'] is None, record
            assert math.isfinite(record['ratio']) and record['ratio'] > 0, record
            assert record['peak_rss_mb'] > 0, record
        if record['bench'] == 'recall_hybrid':
            assert record['p50_ms'] > 0 and record['baseline_p50_ms'] > 0, record
            assert record['matrix_full_loads'] == 1, 'recalls reloaded the vector matrix'
        if record['bench'] == 'learn_rate' and record['embedder'] != 'none':
            assert record['matrix_full_loads'] == 1, 'learns reloaded the vector matrix'
    learners = {record['embedder'] for record in records if record['bench'] == 'learn_rate'}
    assert {'none', 'hashing-v1-256'} <= learners
    quality = [record for record in records if record['bench'] == 'recall_quality']
    assert 'hashing-v1-256' in {record['embedder'] for record in quality}
    for record in quality:
        for mode in ('keyword', 'vector', 'hybrid'):
            for key in ('r1', 'r5', 'r5_paraphrase', 'r1_dev', 'r5_test'):
                assert 0.0 <= record[f'{mode}_{key}'] <= 1.0, record


def test_quality_set_is_large_enough():
    lines = [json.loads(line) for line in
             (REPO / 'bench' / 'data' / 'recall_quality.jsonl').read_text().splitlines()]
    queries = [line for line in lines if 'query' in line]
    memories = {line['memory'] for line in lines if 'memory' in line}
    assert len(queries) >= 100
    assert all(line['answer'] in memories for line in queries)


def test_history_shows_a_typed_records_trail_and_the_key_rotations(tmp_path, capsys):
    """Issue 26.5: history of a typed record (also one approved from a proposal) and keys."""
    memory = tmp_path / 'robot-memory.md'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n'
                      '    proposals:\n      agents: propose\n')
    common = ['--file', str(memory), '--at', AT]
    code, out, err = run(capsys, 'learn', 'The charging dock is in the hallway', '--json',
                         *common)
    assert code == 0, err
    direct = json.loads(out)['record_id']
    code, _, err = run(capsys, 'forget', direct, '--reason', 'the dock moved', *common)
    assert code == 0, err
    code, out, err = run(capsys, 'history', direct, '--file', str(memory))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and 'the dock moved' in lines[1], out

    code, out, err = run(capsys, 'learn', 'The spare wheels are in locker 4', '--json',
                         '--config', str(config), *common)
    assert code == 0 and json.loads(out)['action'] == 'proposed', out
    code, out, err = run(capsys, 'approve', '--all', '--actor', 'operator:ann', '--json',
                         '--config', str(config), *common)
    assert code == 0, err
    approved = json.loads(out)['outcome'].split()[1].rstrip(':')
    code, out, err = run(capsys, 'history', approved, '--json', '--file', str(memory))
    assert code == 0, err
    trail = [json.loads(line) for line in out.splitlines()]
    assert [item['record_id'] for item in trail] == [approved]
    assert 'approved by operator:ann' in trail[0]['actor'], trail

    sealing = tmp_path / 'sealing.yaml'
    sealing.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n')
    code, _, err = run(capsys, 'learn', 'The locker code is 4711', '--sensitivity', 'high',
                       '--config', str(sealing), *common)
    assert code == 0, err
    code, _, err = run(capsys, 'rotate-key', '--config', str(sealing), *common)
    assert code == 0, err
    code, out, err = run(capsys, 'history', 'substrate:key', '--file', str(memory))
    assert code == 0 and 'rotate-key' in out, (out, err)


def test_stats_with_typed_memory_only_shows_it(tmp_path, capsys):
    """Issue 26.11: an agent-only user sees the typed memory's stats and search mode."""
    memory = tmp_path / 'm.md'
    code, _, err = run(capsys, 'learn', 'The dock is in the hallway', '--file', str(memory),
                       '--at', AT)
    assert code == 0 and not memory.exists(), err
    code, out, err = run(capsys, 'stats', '--file', str(memory))
    assert code == 0, err
    assert 'no memory file here yet' in out and 'substrate records: 1' in out, out
    assert 'substrate search: ' in out
    code, out, _ = run(capsys, 'stats', '--file', str(memory), '--json')
    stats = json.loads(out)
    assert stats['file_exists'] is False and stats['substrate']['records'] == 1
    code, _, err = run(capsys, 'stats', '--file', str(tmp_path / 'none.md'))
    assert code == 1 and 'no memory file here yet' in err


def test_mcp_refuses_a_file_in_a_directory_that_does_not_exist(tmp_path):
    """Issue 26.11: a mistyped --file must not build directories and serve an empty memory."""
    missing = tmp_path / 'no' / 'such' / 'm.md'
    calls = [{'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
              'params': {'protocolVersion': '2025-06-18', 'capabilities': {},
                         'clientInfo': {'name': 't', 'version': '0'}}},
             {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call',
              'params': {'name': 'learn', 'arguments': {'text': 'The dock is in the hall'}}}]
    env = child_env()
    run_ = subprocess.run([sys.executable, '-m', 'robot_memory.cli.main', 'mcp', '--file',
                           str(missing)], input=''.join(json.dumps(c) + '\n' for c in calls),
                          capture_output=True, text=True, env=env, timeout=60)
    assert run_.returncode == 1, (run_.stdout, run_.stderr)
    assert f'{missing.parent} does not exist' in run_.stderr and 'check --file' in run_.stderr
    assert not (tmp_path / 'no').exists()


def test_a_secret_waiting_for_approval_is_not_in_its_summary_list_or_audit(tmp_path, capsys):
    # Not encrypted at rest (no substrate_encrypt_from), a high or hyper learn's summary
    # named its text, and the review page shows summaries to anyone who can open it.
    memory = tmp_path / 'robot-memory.md'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    proposals:\n      agents: propose\n')
    common = ['--file', str(memory), '--at', AT, '--config', str(config)]
    for text, extra in (('The wifi password is hunter2', []),
                        ('The vault combination is 12-34-56', ['--sensitivity', 'hyper'])):
        code, out, err = run(capsys, 'learn', text, '--json', *extra, *common)
        assert code == 0 and json.loads(out)['action'] == 'proposed', (out, err)
        assert text not in out
    code, out, err = run(capsys, 'proposals', *common)
    assert code == 0, err
    assert 'hunter2' not in out and '12-34-56' not in out, out
    assert '(high sensitivity: 28 characters, not shown in this summary)' in out, out
    assert '(hyper sensitivity: 33 characters, not shown in this summary)' in out, out
    with sqlite3.connect(tmp_path / 'robot-memory.db') as conn:
        tables = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%audit%'")]
        audit = ' '.join(str(row) for table in tables
                         for row in conn.execute(f'SELECT * FROM {table}'))
    assert tables and 'proposed' in audit, (tables, audit[:500])
    assert 'hunter2' not in audit and '12-34-56' not in audit
    # A plain fact is still named, so a person sees what they approve.
    code, out, err = run(capsys, 'learn', 'The lift is out of order', '--json', *common)
    assert code == 0 and 'The lift is out of order' in json.loads(out)['message'], out
