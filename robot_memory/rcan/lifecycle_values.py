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
The lifecycle constants as plain values, at their defaults in ``DEFAULTS``; no pydantic.

``lifecycle`` (the functions that read them) and ``lifecycle_config`` (the same constants
validated by pydantic) both import these, so neither imports the other's half.
"""

from typing import NamedTuple


class LifecycleValues(NamedTuple):
    """
    The lifecycle constants as plain values; ``DEFAULTS`` holds them at their defaults.

    ``LifecycleConfig`` (pydantic, imported when first named) holds the same names and
    validates them; its defaults are these. Every function here reads a config by its
    attributes only, so either one will do.
    """

    reinforce_step: float = 0.10
    decay_per_day: float = 0.05
    inject_min: float = 0.30
    prune_min: float = 0.10
    band_high: float = 0.80
    band_medium: float = 0.50
    token_budget: int = 400
    max_prune_fraction: float = 0.5
    recent_hours: float = 24.0


DEFAULTS = LifecycleValues()
# The largest token budget a context block may be asked for.
MAX_TOKEN_BUDGET = 1_000_000
