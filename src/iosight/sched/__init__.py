"""Scheduling: burst-aware start times and I/O resource allocation."""
