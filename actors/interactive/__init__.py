"""The interactive agent: a conversation that launches runs (launch_run), and projects."""
