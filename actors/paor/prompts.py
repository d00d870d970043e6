"""What a PAOR round tells its model (and how the scripted backend knows it is in one)."""

from __future__ import annotations

__all__ = ["PAOR_NOTE"]

PAOR_NOTE = (
    "Work through this task in iterations of plan, act, observe, reflect. Plan: call "
    "submit_plan with the goal and the steps (each with the tools it will call and the steps "
    "it depends on). Act: call those tools; reply without a tool call when the steps are done. "
    "You will be shown what the calls returned. Reflect: call reflect. Repeat until the goal "
    "is achieved; your final progress becomes your answer."
)
