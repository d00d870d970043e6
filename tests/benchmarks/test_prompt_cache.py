"""The simulated prompt cache reads back what OpenAI's would: the longest prefix of a prompt
that an earlier prompt had, in whole 128-token blocks, and nothing below 1,024 tokens."""

from __future__ import annotations

from conclave.benchmarks.prompt_cache import BLOCK_TOKENS, MIN_TOKENS, TOKEN_CHARS, PromptCache

BLOCK = BLOCK_TOKENS * TOKEN_CHARS
"""Characters in a block."""


def _text(blocks: int, fill: str = "a") -> str:
    return "".join(f"{fill}{i:04d}".ljust(BLOCK, fill) for i in range(blocks))


def test_a_prompt_never_seen_has_nothing_cached() -> None:
    assert PromptCache().read(_text(20)) == 0


def test_the_same_prompt_again_is_read_from_the_cache_in_whole_blocks() -> None:
    cache = PromptCache()
    prompt = _text(12) + "a tail shorter than a block"
    cache.read(prompt)

    assert cache.read(prompt) == 12 * BLOCK_TOKENS


def test_a_prompt_is_cached_as_far_as_it_shares_a_prefix_with_an_earlier_one() -> None:
    cache = PromptCache()
    cache.read(_text(10) + _text(5, "b"))

    assert cache.read(_text(10) + _text(5, "c")) == 10 * BLOCK_TOKENS


def test_a_shared_prefix_below_the_minimum_is_not_read() -> None:
    cache = PromptCache()
    below = MIN_TOKENS // BLOCK_TOKENS - 1
    cache.read(_text(below) + _text(5, "b"))

    assert cache.read(_text(below) + _text(5, "c")) == 0


def test_text_shared_after_a_difference_is_not_read() -> None:
    cache = PromptCache()
    cache.read("x" * BLOCK + _text(20))

    assert cache.read("y" * BLOCK + _text(20)) == 0


def test_the_cache_counts_the_tokens_it_was_asked_about_and_those_it_read() -> None:
    cache = PromptCache()
    cache.read(_text(10))
    cache.read(_text(10))

    assert (cache.stats.prompts, cache.stats.prompt_tokens) == (2, 20 * BLOCK_TOKENS)
    assert cache.stats.cached_tokens == 10 * BLOCK_TOKENS
