"""Scheduling: burst-aware start times (burst_aware) and I/O resource allocation (ioresources)."""
