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
How a service of memory_node refuses: the one conversion of an error into its reply.

Every service reply of robot_memory has ``success`` and ``message``. A handler catches
``RobotMemoryError`` (every refusal of the core derives from it), plus the standard
library's errors it expects (a bad value, a file it cannot use), and answers with
:func:`refuse`; no handler fills a refusal by hand. No rclpy here: it is tested alone.
"""

from typing import Union


def refuse(response, error: Union[BaseException, str], prefix: str = ''):
    """
    Fill ``response`` as the refusal of ``error`` and return it.

    :param response: the service's reply (any type with ``success`` and ``message``)
    :param error: what was wrong (an error, or the refusal's own words); its message says
        what to do
    :param prefix: what was refused, e.g. ``'undo refused: '`` (empty: the message alone)
    """
    response.success = False
    response.message = f'{prefix}{error}'
    return response
