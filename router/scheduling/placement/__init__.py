"""Where a model loads: which GPU (device_planner, device_snapshot), which cluster node
(node_planner)."""
