"""`conclave batch`: many headless runs from a JSON Lines file (see docs/batch.md)."""
