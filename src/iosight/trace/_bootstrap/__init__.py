"""Holds the sitecustomize put first on PYTHONPATH by ``iosight trace`` (a package so it ships)."""
