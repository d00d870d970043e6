"""Tools agents call on files and in their sandbox.

``protocol`` (what the loop needs: ``ToolExecutor``, ``ToolResult``), ``spec`` (a tool:
schema plus implementation, the context it runs in, its limits), ``executor`` (one agent's
tools: ``agent_tools``), ``paths`` (the path policy and its grants), ``fs`` (opening what
the policy approved without following a swapped-in link), ``files``, ``search`` and
``shell`` (the tools), ``arguments`` (schema checks), ``gitignore``, ``text`` (caps, diffs).
"""
