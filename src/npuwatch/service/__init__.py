"""Running as a systemd service: readiness and status notifications, and the watchdog heartbeat."""
