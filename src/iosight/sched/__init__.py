"""Scheduling: burst-aware start times (burst_aware) and distributed I/O resources."""
