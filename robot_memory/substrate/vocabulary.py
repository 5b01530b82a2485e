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
The substrate's vocabulary and field limits, without pydantic: one home for every edge.

The command line's argument parser offers them as choices and in its help, the MCP tool
schemas state them, the read paths (recall, forget) check against them without importing
pydantic, and :mod:`.models` builds its record types on them.
"""

MEMORY_TYPES = ('episodic', 'working', 'semantic', 'competence', 'plan_graph')
SENSITIVITIES = ('public', 'low', 'medium', 'high', 'hyper')

# Characters; see the field limits below.
MAX_TEXT = 4000
MAX_QUERY = 4000
MAX_REASON = 1000
# Characters of one tag, and tags of one record (the MCP server's tool schemas state them).
MAX_TAG = 64
MAX_TAGS = 20
# Most records one recall returns.
MAX_K = 100

DECAY_CURVES = ('exponential', 'linear', 'custom')
DELETION_POLICIES = ('auto_prune', 'manual_only', 'never')
PROVENANCE_KINDS = ('event', 'artifact', 'tool_call', 'observation', 'outcome', 'audit',
                    'entry', 'human', 'import')
RELATION_PREDICATES = ('supports', 'contradicts', 'derived_from', 'supersedes', 'related_to',
                       'follows')
RECORD_STATUSES = ('active', 'contested', 'retracted', 'superseded', 'archived')
WORKING_STATES = ('planning', 'executing', 'blocked', 'waiting', 'done')
VALIDITY_MODES = ('global', 'conditional', 'timeboxed')
REVISION_STATUSES = ('active', 'contested', 'retracted')

# Field limits, one home for every edge (Python API, CLI, MCP tool schemas, ROS .srv comments):
# characters for text fields, items for lists. A refusal names the field and its limit.
MAX_RECORD_ID = 200
MAX_SCOPE = 100
# Derived from the text when none is given (a fact without a parsed subject is keyed by its
# whole text; a procedure's name by its first words), so never shorter than the text.
MAX_SUBJECT = MAX_TEXT
MAX_PREDICATE = 200
MAX_SKILL_NAME = MAX_TEXT
FIELD_LIMITS = {'text': MAX_TEXT, 'query': MAX_QUERY, 'reason': MAX_REASON,
                'id': MAX_RECORD_ID, 'tag': MAX_TAG, 'tags': MAX_TAGS, 'scope': MAX_SCOPE,
                'subject': MAX_SUBJECT, 'predicate': MAX_PREDICATE,
                'skill_name': MAX_SKILL_NAME}
