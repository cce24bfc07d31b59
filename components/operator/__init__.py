"""What runs on the operator's machine around a run: the reaper of a killed run's
processes, the Prometheus scrape config."""
