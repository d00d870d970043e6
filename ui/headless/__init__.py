"""Headless runs: ``conclave run``, ``conclave -p``, ``echo TASK | conclave``, ``validate``."""
