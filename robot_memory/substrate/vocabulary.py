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
The substrate's memory types, sensitivity classes, text and tag limits, without pydantic.

The command line's argument parser offers them as choices and in its help; :mod:`.models`
(the home of every other field limit) builds its record types on them.
"""

MEMORY_TYPES = ('episodic', 'working', 'semantic', 'competence', 'plan_graph')
SENSITIVITIES = ('public', 'low', 'medium', 'high', 'hyper')

# Characters; see the field limits in models.
MAX_TEXT = 4000
MAX_QUERY = 4000
MAX_REASON = 1000
# Characters of one tag, and tags of one record (the MCP server's tool schemas state them).
MAX_TAG = 64
MAX_TAGS = 20
