"""The ROS 2 layer of robot_memory: the only place that imports rclpy and message classes."""
