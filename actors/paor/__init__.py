"""Plan-Act-Observe-Reflect: an agent's round as iterations of plan, act, observe, reflect.

``state`` holds the machine (the table of legal moves), ``driver`` runs a round's phases
(``PaorLoop``), ``plan``, ``observe`` and ``reflect`` what each phase exchanges with the
model, ``report`` how a round ends and its summary, ``corrections`` the user's corrections
on their way in, ``events`` what a round records. docs/paor.md is the user's page.
"""
