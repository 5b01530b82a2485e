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
Message type support without ROS's code generator: 2.3 MB less resident in memory_node.

A message type's ``__import_type_support__`` runs ``from rosidl_generator_py import
import_type_support``, and ``rosidl_generator_py/__init__.py`` also imports the generator it
ships for build time (``generate_py``: rosidl_parser, its lark grammar, empy), which a running
node never calls. Imported on their own after rclpy they hold 7.2 MB; in memory_node, which
shares some of what they load, 2.3 MB (Kilted, measured with and without).

:func:`skip_code_generator`, called before the first node is created, registers the package
with ``import_type_support`` only; ``generate_py`` is still there, imported on first use.
Where the package is not laid out as expected, it does nothing and rclpy imports it as usual.
"""

import importlib.util
import sys
import types

PACKAGE = 'rosidl_generator_py'


def skip_code_generator() -> bool:
    """Register ``rosidl_generator_py`` without its generator; True when it did."""
    if PACKAGE in sys.modules:
        return False
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return False
    package = types.ModuleType(PACKAGE)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    package.__package__ = PACKAGE
    sys.modules[PACKAGE] = package
    try:
        # With the stand-in package in sys.modules, only this submodule loads.
        # lazy: the code generator is not loaded, 2.3 MB of memory_node
        from rosidl_generator_py import (  # type: ignore[import-untyped]
            import_type_support_impl as impl)
        setattr(package, 'import_type_support', impl.import_type_support)
    except (ImportError, AttributeError):
        del sys.modules[PACKAGE]  # another layout: rclpy imports the package itself
        return False
    setattr(package, '__all__', ['import_type_support', 'generate_py'])
    setattr(package, '__getattr__', _on_demand)  # PEP 562: the rest of the package when asked
    return True


def _on_demand(name: str):
    if name == 'generate_py':
        # lazy: lark, empy ~2-7 MB, for a build-time generator a running node never calls
        from rosidl_generator_py import generate_py_impl
        return generate_py_impl.generate_py
    raise AttributeError(f'module {PACKAGE!r} has no attribute {name!r}')
