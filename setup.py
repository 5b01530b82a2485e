"""Plain-Python distribution of robot_memory: the core and the CLI, no ROS needed.

`pip install .` installs this; `colcon build` uses CMakeLists.txt instead, which
also generates the ROS 2 interfaces.
"""

from setuptools import setup

setup()
