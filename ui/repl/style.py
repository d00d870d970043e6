"""The REPL's colours, by class name; the layout and the renderers name classes, never colours.

Answers' Markdown is highlighted by pygments token classes (``class:pygments.*``); code in
fenced blocks uses the same ones.
"""

from __future__ import annotations

from prompt_toolkit.styles import Style

__all__ = ["STYLE"]

STYLE = Style.from_dict(
    {
        "prompt": "bold ansicyan",
        "user": "bold",
        "error": "ansired",
        "warning": "ansiyellow",
        "notice": "ansiyellow",
        "hint": "ansigreen bold",
        "queued": "ansibrightblack italic",
        "summary": "ansigreen",
        "summary.detail": "ansibrightblack",
        "progress.head": "ansicyan",
        "progress.agent": "",
        "progress.failed": "ansired",
        "progress.stream": "ansibrightblack",
        "tool": "ansiblue",
        "tool.ok": "ansibrightblack",
        "tool.failed": "ansired",
        "status": "ansibrightblack",
        "shell": "ansibrightblack",
        # The live step list of an executing plan.
        "plan.head": "ansicyan",
        "plan.pending": "ansibrightblack",
        "plan.active": "ansiyellow bold",
        "plan.done": "ansigreen",
        # The mode bar and the tab bar.
        "bar": "bg:#262626 #d0d0d0",
        "bar.key": "bg:#262626 #8a8a8a",
        "bar.on": "bg:#262626 ansigreen bold",
        "bar.off": "bg:#262626 #d0d0d0",
        "bar.chip": "bg:ansiblue ansiwhite bold",
        # Each collaboration mode's chip its own colour: planning (read-only) calm,
        # executing (autonomous) loud.
        "bar.chip.plan": "bg:ansimagenta ansiwhite bold",
        "bar.chip.execute": "bg:ansired ansiwhite bold",
        "bar.disabled": "bg:#262626 #585858",
        "tab": "#d0d0d0",
        "tab.active": "reverse bold",
        "tab.inactive": "#585858",
        # Dialogs.
        "dialog.title": "bold underline",
        "dialog.row": "",
        "dialog.selected": "reverse",
        "dialog.detail": "ansibrightblack",
        # Markdown (pygments' token classes).
        "pygments.generic.heading": "bold ansibrightcyan",
        "pygments.generic.subheading": "bold ansicyan",
        "pygments.generic.strong": "bold",
        "pygments.generic.emph": "italic",
        "pygments.generic.deleted": "strike",
        "pygments.literal.string.backtick": "ansiyellow",
        "pygments.keyword": "ansimagenta",
        "pygments.name.tag": "ansiblue underline",
        "pygments.comment": "ansibrightblack",
        "pygments.literal.string": "ansigreen",
        "pygments.literal.number": "ansiyellow",
        "pygments.name.builtin": "ansicyan",
        "pygments.name.function": "ansiblue",
    }
)
