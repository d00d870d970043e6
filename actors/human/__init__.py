"""People in the loop: the HumanGate and its headless policies."""
