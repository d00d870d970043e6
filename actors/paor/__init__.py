"""Plan-Act-Observe-Reflect: an agent's round as iterations of plan, act, observe, reflect.

``state`` holds the machine (the table of legal moves), ``driver`` runs a round's phases
(``PaorLoop``), ``plan``, ``observe`` and ``reflect`` what each phase exchanges with the
model, ``report`` how a round ends and its summary, ``corrections`` the user's corrections
on their way in, ``events`` what a round records. ``subagents`` runs delegated steps as
child actors (``subagent_prompts`` what they are told, ``subagent_events`` what passes and is
recorded, ``subagent_paths`` a sub-agent's path and its agent), ``budget`` what an agent may
spend and its sub-agents used. docs/paor.md is the user's page.
"""
