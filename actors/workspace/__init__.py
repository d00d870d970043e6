"""Where agents work on files: the run's directory layout, answer snapshots shared with the
agents shown them, each agent's grants, and the WriteTracker of the writable context paths."""
