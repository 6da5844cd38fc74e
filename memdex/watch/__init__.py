"""The watcher: filesystem events, the long-running service, handoff and service units."""
