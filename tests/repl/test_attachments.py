"""``@file`` attaches a file to the prompt; a file that cannot be attached is refused with
the reason, and nothing is sent."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from conclave.actors.llm.protocol import CompletionRequest
from conclave.ui.repl.attachments import MAX_ATTACHMENT_BYTES, AttachError, attach, mentioned
from conclave.ui.repl.commands import SlashCompleter
from conclave.ui.repl.state import ReplState
from tests.repl.backends import recording
from tests.repl.harness import Session, config, play


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory the REPL starts in, with a notes file."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("buy more paperclips\n", encoding="utf-8")
    monkeypatch.chdir(work)
    return work


def test_an_attached_files_text_reaches_the_agents(here: Path, tmp_path: Path) -> None:
    requests: dict[str, list[CompletionRequest]] = {}

    async def scenario(session: Session) -> None:
        await session.result_of("Summarise @notes.txt please")

    state = play(scenario, tmp_path, conclave=config(1), backend_factory=recording(requests))
    prompt = "\n".join(m.content for m in requests["agent-1"][0].messages if m.content)
    assert "Summarise @notes.txt please" in prompt
    assert "Attached file notes.txt:\n```\nbuy more paperclips\n```" in prompt
    shown = "".join(text for block in state.transcript for _, text, *_ in block)
    assert "attached notes.txt (20 bytes)" in shown
    assert "> Summarise @notes.txt please\n" in shown  # what was typed, not the file
    assert state.history[-1].task.endswith("buy more paperclips\n```")


def test_a_missing_file_is_refused_and_the_line_stays_to_be_corrected(
    here: Path, tmp_path: Path
) -> None:
    async def scenario(session: Session) -> None:
        session.type("Summarise @nots.txt")
        await session.until(lambda: session.state.notice, "the refusal")
        await session.settle()
        assert session.repl.buffer.text == "Summarise @nots.txt"
        assert not session.state.running
        assert session.state.notice.startswith("@nots.txt: no such file (from ")
        assert "nothing was sent" in session.state.notice

    state = play(scenario, tmp_path, conclave=config(1))
    assert state.usage.runs == 0


def test_tab_completes_a_path_after_at(here: Path) -> None:
    completer = SlashCompleter(ReplState(agents=("a",)))
    found = list(completer.get_completions(Document("Summarise @no"), CompleteEvent()))
    assert [c.text for c in found] == ["tes.txt"]


def test_an_email_address_is_not_an_attachment() -> None:
    assert mentioned("write to me@example.com about @a.txt and @a.txt") == ["a.txt"]


def test_a_directory_is_refused(here: Path) -> None:
    (here / "src").mkdir()
    with pytest.raises(AttachError, match=r"^@src: is a directory; name a file"):
        attach("read @src", here)


def test_a_file_too_large_is_refused_with_its_size(here: Path) -> None:
    (here / "big.log").write_bytes(b"x" * (MAX_ATTACHMENT_BYTES + 1))
    with pytest.raises(AttachError, match=r"^@big\.log: too large to attach \(262,145 bytes"):
        attach("read @big.log", here)


def test_a_binary_file_is_refused(here: Path) -> None:
    (here / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(AttachError, match=r"^@logo\.png: not a text file"):
        attach("look at @logo.png", here)


def test_a_files_own_fence_cannot_close_the_one_around_it(here: Path) -> None:
    (here / "doc.md").write_text("```\nnot the end\n```\n", encoding="utf-8")
    attached = attach("see @doc.md", here)
    assert attached.task.endswith("````\n```\nnot the end\n```\n````")
