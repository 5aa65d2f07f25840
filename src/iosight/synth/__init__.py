"""Generators of realistic synthetic data that write warehouse tables."""
