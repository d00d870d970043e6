"""Plan-Act-Observe-Reflect: an agent's round as iterations of plan, act, observe, reflect.

``state`` holds the machine (the table of legal moves), ``events`` what it records.
"""
