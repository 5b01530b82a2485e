"""The substrate's memory types, sensitivity classes, text and tag limits, without pydantic.

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
