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
How a record's salience decays: computed at read time from the stored value.

The stored salience is "salience as of last reinforcement"; what a read sees is that
value decayed by the record's profile (curve, half-life, floor, maximum age) over the
time since. Pinned records never decay.
"""

from typing import Optional

DAY = 86400.0


def effective_salience(salience: float, curve: str, half_life_s: float, floor: float,
                       elapsed_s: float, pinned: bool = False,
                       age_s: Optional[float] = None, max_age_s: Optional[float] = None) -> float:
    """
    Salience after ``elapsed_s`` seconds of decay; pinned records never decay.

    Exponential: ``s * 0.5 ** (elapsed / half_life)``; linear: ``s * (1 - elapsed /
    (2 * half_life))``; custom: no automatic decay (the host drives salience through
    reinforcement and feedback). Never below the floor (nor above the stored value),
    except past ``max_age_s`` where an unpinned record's salience is 0.
    """
    if pinned:
        return salience
    if max_age_s is not None and age_s is not None and age_s > max_age_s:
        return 0.0
    elapsed = max(0.0, elapsed_s)
    if curve == 'exponential':
        value = salience * 0.5 ** (elapsed / half_life_s)
    elif curve == 'linear':
        value = salience * max(0.0, 1.0 - elapsed / (2.0 * half_life_s))
    else:
        value = salience
    return max(min(floor, salience), value)


def row_salience(row: dict, now_s: float) -> float:
    """Return the salience of a stored record (a row of its columns) at ``now_s``."""
    return effective_salience(row['salience'], row['decay_curve'], row['half_life_s'],
                              row['decay_floor'], now_s - row['last_reinforced_at'],
                              bool(row['pinned']), now_s - row['created_at'], row['max_age_s'])
