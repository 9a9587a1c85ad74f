"""Kits shared by the test files and the ``stress/`` scripts. Nothing here is a test."""
