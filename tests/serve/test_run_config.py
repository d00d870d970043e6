"""A client's run gets the server's config finished for the modes its ``start_run`` names,
through the one resolver: modes the config cannot run are refused before anything starts."""

from __future__ import annotations

from pathlib import Path

from tests.serve.helpers import connect, scripted_config, serving


async def test_a_run_in_modes_the_config_cannot_run_is_refused_saying_why(
    tmp_path: Path,
) -> None:
    # 300 agents that all see each other are refused (past 256); single mode runs one.
    async with (
        serving(tmp_path, config=scripted_config(300)) as server,
        connect(server) as client,
    ):
        await client.send(type="start_run", task="x", agent_mode="multi", request_id="r1")
        refused = await client.next()
        run_id = await client.start_run(agent_mode="single", agent="agent-9")
        result = (await client.until("result"))[-1]

    assert refused["type"] == "error"
    assert (refused["code"], refused["request_id"]) == ("run_not_started", "r1")
    assert "visibility 'all' with 300 agents is all-to-all" in refused["message"]
    assert result["run_id"] == run_id
    assert result["winner"] == "agent-9"
