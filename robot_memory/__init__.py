"""robot_memory: operational memory for ROS 2 robots (RCAN Robot Memory Schema 1.0).

The modules directly in this package are the pure core and never import rclpy;
the ROS 2 layer lives in ``robot_memory.ros``.
"""

__version__ = '0.1.0'
