"""The interactive REPL: prompt-toolkit on asyncio, the trio runtime on a thread of its own.

Split by job: :mod:`~ui.repl.state` (what the screen shows), :mod:`~ui.repl.service` (the
trio side: pool, hub, runs, conversation), :mod:`~ui.repl.layout`, :mod:`~ui.repl.keys`,
:mod:`~ui.repl.commands` (slash commands), :mod:`~ui.repl.style`, :mod:`~ui.repl.render`
(answers and summaries as formatted text) and :mod:`~ui.repl.app` (``run_repl``).
"""
