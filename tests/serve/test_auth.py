"""Who may connect: tokens in the handshake or the first message, and the Origin check."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected

from conclave.ui.serve.auth import (
    SUBPROTOCOL,
    TokenError,
    is_local_host,
    presented_token,
    read_token_file,
)
from conclave.ui.serve.protocol import CloseCode
from tests.serve.helpers import TOKEN, bearer, code_of, connect, serving


async def test_a_bearer_header_with_the_token_is_welcomed(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server, welcome=False) as client:
        welcome = await client.next()

    assert welcome["type"] == "welcome"
    assert welcome["protocol"] == 1


async def test_a_browser_subprotocol_token_is_welcomed_and_never_echoed(tmp_path: Path) -> None:
    async with (
        serving(tmp_path) as server,
        connect(
            server, headers=[], subprotocols=[SUBPROTOCOL, f"conclave.bearer.{TOKEN}"]
        ) as client,
    ):
        assert client.ws.subprotocol == SUBPROTOCOL


async def test_an_auth_first_message_with_the_token_is_welcomed(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server, headers=[], welcome=False) as client:
        await client.send(type="auth", token=TOKEN)
        assert (await client.next())["type"] == "welcome"


@pytest.mark.parametrize(
    ("headers", "subprotocols"),
    [(bearer("wrong-token-0123456789"), None), ([], [SUBPROTOCOL, "conclave.bearer.nope"])],
    ids=["header", "subprotocol"],
)
async def test_a_wrong_token_in_the_handshake_is_rejected_with_401(
    tmp_path: Path, headers: list[tuple[bytes, bytes]], subprotocols: list[str] | None
) -> None:
    async with serving(tmp_path) as server:
        with pytest.raises(ConnectionRejected) as rejected:
            async with connect(server, headers=headers, subprotocols=subprotocols):
                pass

    assert rejected.value.status_code == 401
    assert b"wrong token" in (rejected.value.body or b"")


async def test_no_token_and_another_first_message_gets_unauthorized_and_close_4401(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as server, connect(server, headers=[], welcome=False) as client:
        await client.send(type="start_run", task="sneak in")
        error = await client.next()
        with pytest.raises(ConnectionClosed) as closed:
            await client.next()

    assert error["type"] == "error"
    assert error["code"] == "unauthorized"
    assert code_of(closed.value) == CloseCode.UNAUTHORIZED


async def test_a_wrong_token_in_the_auth_message_closes_with_4401(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server, headers=[], welcome=False) as client:
        await client.send(type="auth", token="not-the-token-at-all")
        error = await client.next()
        with pytest.raises(ConnectionClosed) as closed:
            await client.next()

    assert error["code"] == "unauthorized"
    assert "wrong token" in error["message"]
    assert code_of(closed.value) == CloseCode.UNAUTHORIZED


async def test_a_silent_connection_without_a_token_is_closed_after_the_auth_timeout(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, auth_timeout=0.3) as server,
        connect(server, headers=[], welcome=False) as client,
    ):
        with trio.fail_after(10):
            error = await client.next()
            with pytest.raises(ConnectionClosed) as closed:
                await client.next()

    assert "no auth message within 0.3 s" in error["message"]
    assert code_of(closed.value) == CloseCode.UNAUTHORIZED


async def test_a_page_from_an_origin_not_allowed_is_rejected_with_403(tmp_path: Path) -> None:
    headers = [*bearer(), (b"origin", b"https://evil.example")]
    async with serving(tmp_path) as server:
        with pytest.raises(ConnectionRejected) as rejected:
            async with connect(server, headers=headers):
                pass

    assert rejected.value.status_code == 403
    assert b"--allow-origin https://evil.example" in (rejected.value.body or b"")


async def test_a_page_from_an_allowed_origin_is_welcomed(tmp_path: Path) -> None:
    headers = [*bearer(), (b"origin", b"http://localhost:3000")]
    allowed = frozenset({"http://localhost:3000"})
    async with (
        serving(tmp_path, allowed_origins=allowed) as server,
        connect(server, headers=headers),
    ):
        pass


async def test_a_bad_origin_is_refused_even_with_the_right_token_in_first_message(
    tmp_path: Path,
) -> None:
    headers = [(b"origin", b"http://127.0.0.1:9999")]
    async with serving(tmp_path) as server:
        with pytest.raises(ConnectionRejected) as rejected:
            async with connect(server, headers=headers, welcome=False):
                pass

    assert rejected.value.status_code == 403


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("example.com", False),
    ],
)
def test_only_loopback_hosts_count_as_local(host: str, local: bool) -> None:
    assert is_local_host(host) is local


def test_the_header_wins_over_a_subprotocol() -> None:
    token = presented_token(bearer("from-header"), ["conclave.bearer.from-subprotocol"])

    assert token == "from-header"


def test_another_authorization_scheme_counts_as_a_wrong_token() -> None:
    assert presented_token([(b"authorization", b"Basic abc")], []) == ""


def test_a_token_file_is_read_without_its_surrounding_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n", encoding="utf-8")

    assert read_token_file(str(path)) == TOKEN


@pytest.mark.parametrize(
    ("content", "says"),
    [("", "an empty file"), ("short", "5 characters"), ("has spaces inside it ok", "characters")],
)
def test_an_unusable_token_file_says_why(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "token"
    path.write_text(content, encoding="utf-8")

    with pytest.raises(TokenError) as error:
        read_token_file(str(path))

    assert says in str(error.value)
    assert "secrets.token_urlsafe" in str(error.value)


def test_a_missing_token_file_says_it_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="cannot read it"):
        read_token_file(str(tmp_path / "absent"))
