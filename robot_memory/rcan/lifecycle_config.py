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
The lifecycle constants as a validated pydantic model (``lifecycle.LifecycleConfig``).

Imported the first time ``lifecycle.LifecycleConfig`` or ``lifecycle.DEFAULT_CONFIG`` is
named, so that a command that only reads on the defaults (``robot-memory show``) never
imports pydantic; it uses ``lifecycle.DEFAULTS``, the same values as plain attributes.
"""

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from robot_memory.errors import SettingsConflict
from robot_memory.rcan.lifecycle_values import DEFAULTS
from robot_memory.rcan.lifecycle_values import MAX_TOKEN_BUDGET


class LifecycleConfig(BaseModel):
    """Every constant of the lifecycle and the context block; all configurable."""

    # Built when first validated, and imported only when named (lifecycle.LifecycleConfig):
    # a command on the defaults (robot-memory show) uses lifecycle.DEFAULTS instead.
    model_config = ConfigDict(frozen=True, extra='forbid', defer_build=True)

    reinforce_step: float = Field(DEFAULTS.reinforce_step, gt=0.0, le=1.0,
                                  description='Confidence added when new evidence matches (§4.2)')
    decay_per_day: float = Field(DEFAULTS.decay_per_day, ge=0.0, le=1.0,
                                 description='Confidence lost per day without evidence (§4.3)')
    inject_min: float = Field(DEFAULTS.inject_min, ge=0.0, le=1.0,
                              description='Lowest effective confidence injected into context '
                                          '(§4.4)')
    prune_min: float = Field(DEFAULTS.prune_min, ge=0.0, le=1.0,
                             description='Entries below this effective confidence are pruned '
                                         '(§4.5)')
    band_high: float = Field(DEFAULTS.band_high, ge=0.0, le=1.0,
                             description='🔴 at or above this confidence')
    band_medium: float = Field(DEFAULTS.band_medium, ge=0.0, le=1.0,
                               description='🟡 at or above this confidence')
    token_budget: int = Field(DEFAULTS.token_budget, ge=1, le=MAX_TOKEN_BUDGET,
                              description='Default token budget of the context block')
    max_prune_fraction: float = Field(
        DEFAULTS.max_prune_fraction, gt=0.0, le=1.0,
        description='One prune removes at most this share of entries (at least one), so a '
                    'clock jump can never empty the memory at once; the rest go in later cycles')
    recent_hours: float = Field(
        DEFAULTS.recent_hours, ge=0.0, le=8760.0,
        description='Own entries below inject_min reinforced within this many hours are shown '
                    'after the injected ones, in a section labelled as weak recent evidence, '
                    'so a fault seen today reaches the brain today; 0 leaves the section out')

    @model_validator(mode='after')
    def _thresholds_ordered(self):
        order = ('prune_min', 'inject_min', 'band_medium', 'band_high')
        # The pairs out of order name the thresholds to change.
        wrong = [name for low, high in zip(order, order[1:])
                 if getattr(self, low) > getattr(self, high) for name in (low, high)]
        if wrong:
            raise SettingsConflict('thresholds must satisfy prune_min ≤ inject_min ≤ '
                                   f'band_medium ≤ band_high (got {self.prune_min}, '
                                   f'{self.inject_min}, {self.band_medium}, {self.band_high})',
                                   dict.fromkeys(wrong))
        return self


# The defaults satisfy every rule above (test_lifecycle checks it against a validated one).
DEFAULT_CONFIG = LifecycleConfig.model_construct()
