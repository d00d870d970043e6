"""A prompt cache that works as OpenAI's does, for a loopback server to report cached tokens.

OpenAI caches the prefixes of the prompts it has processed and reads a new prompt's longest
cached prefix back, if that is at least 1,024 tokens long, in steps of 128 tokens; the
usage then says ``prompt_tokens_details.cached_tokens``. Anthropic's cache reads the same
prefixes where the request marks them. This simulation keeps, for every prompt it has seen,
a digest of each of its 128-token prefixes (a chain: each block's digest covers everything
before it, as a provider's block-hashed cache does), and answers a prompt with the longest
of its prefixes it has seen. Nothing is evicted (a provider keeps a prefix for minutes; a
benchmark's run takes seconds), a prompt is cached as soon as it arrives (its prefill is
taken to be instant), and one cache serves every model name: on the benchmark server a
model name stands for a scripted agent, while a real run's agents would share one model.

A prompt is the request's tools, then its messages, as JSON, and a token is 4 characters
of it: the same measure for every layout compared, which is what a benchmark needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import orjson

__all__ = ["BLOCK_TOKENS", "MIN_TOKENS", "TOKEN_CHARS", "PromptCache", "prompt_text", "tokens"]

TOKEN_CHARS = 4
"""Characters per token, as the scripted backend counts them."""
BLOCK_TOKENS = 128
"""A cached prefix grows in steps of this many tokens."""
MIN_TOKENS = 1024
"""No prefix shorter than this is read from the cache (OpenAI's minimum)."""


def prompt_text(body: Mapping[str, Any]) -> str:
    """What a Chat Completions request body puts before the reply: tools, then messages."""
    tools: Sequence[Any] = body.get("tools") or ()
    parts = [orjson.dumps(tool).decode() for tool in tools]
    parts += [orjson.dumps(message).decode() for message in body.get("messages") or ()]
    return "".join(parts)


def tokens(text: str) -> int:
    """The prompt's length in tokens (:data:`TOKEN_CHARS` characters each, rounded up)."""
    return -(-len(text) // TOKEN_CHARS)


@attrs.define
class CacheStats:
    prompts: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0


class PromptCache:
    """The prefixes of every prompt seen so far; see the module docstring."""

    def __init__(self, *, min_tokens: int = MIN_TOKENS, block_tokens: int = BLOCK_TOKENS) -> None:
        if min_tokens < block_tokens or block_tokens < 1:
            raise ValueError(
                f"min_tokens ({min_tokens}) must be at least block_tokens ({block_tokens}), "
                "which must be at least 1"
            )
        self.min_tokens = min_tokens
        self.block_tokens = block_tokens
        self._seen: set[bytes] = set()
        self.stats = CacheStats()

    def read(self, text: str) -> int:
        """How many of ``text``'s tokens the cache holds (its longest cached prefix, in whole
        blocks, or 0 below the minimum); then the cache holds all of its prefixes."""
        block = self.block_tokens * TOKEN_CHARS
        digest = b""
        cached_blocks = 0
        missed = False
        for start in range(0, len(text) - block + 1, block):
            digest = hashlib.blake2b(
                digest + text[start : start + block].encode("utf-8", "surrogatepass"),
                digest_size=16,
            ).digest()
            if not missed and digest in self._seen:
                cached_blocks += 1
            else:
                missed = True
                self._seen.add(digest)
        cached = cached_blocks * self.block_tokens
        if cached < self.min_tokens:
            cached = 0
        stats = self.stats
        stats.prompts += 1
        stats.prompt_tokens += tokens(text)
        stats.cached_tokens += cached
        return cached
