"""Generators of realistic synthetic data, one module per kind (DESIGN.md)."""
