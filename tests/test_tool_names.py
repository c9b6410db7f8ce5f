"""Tests for ``llm_worker._tool_names``: the names providers accept, and the renaming rule."""

from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_worker._tool_names import is_valid_tool_name, provider_safe_names

PROVIDERS = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # OpenAI's and Anthropic's documented rule


def digest(name: str, count: int = 0) -> str:
    salted = name.encode() + (b"\0%d" % count if count else b"")
    return hashlib.sha256(salted).hexdigest()[:8]


class TestIsValidToolName:
    @pytest.mark.parametrize("name", ["read_file", "get-user", "A1", "x" * 64, "_"])
    def test_valid(self, name):
        """Letters, digits, '_' and '-', 1 to 64 of them, are valid."""
        assert is_valid_tool_name(name)

    @pytest.mark.parametrize(
        "name", ["", "files.read", "my tool", "x" * 65, "../../etc/passwd", "naïve", "a\n"]
    )
    def test_invalid(self, name):
        """Dots, spaces, more than 64 characters, other characters are refused."""
        assert not is_valid_tool_name(name)


class TestProviderSafeNames:
    def test_valid_names_are_kept(self):
        """A name providers accept stays as it is."""
        assert provider_safe_names(["read_file", "get-user"]) == ["read_file", "get-user"]

    def test_other_characters_become_underscores(self):
        """Each run of other characters becomes one underscore."""
        assert provider_safe_names(["files.read", "my tool", "../../etc/passwd"]) == [
            "files_read",
            "my_tool",
            "_etc_passwd",
        ]

    def test_long_names_are_cut_and_hashed(self):
        """A name over 64 characters: 55 of them, '_' and 8 hex digits of its SHA-256."""
        name = "x" * 300
        assert provider_safe_names([name]) == [f"{'x' * 55}_{digest(name)}"]

    def test_a_renamed_name_never_takes_another_tools_name(self):
        """files.read cannot become files_read when a tool is called that already."""
        assert provider_safe_names(["files_read", "files.read"]) == [
            "files_read",
            f"files_read_{digest('files.read')}",
        ]

    def test_two_names_renamed_alike_both_get_a_hash(self):
        """a.b and a b would both be a_b: each gets its own hash, whatever their order."""
        assert provider_safe_names(["a.b", "a b"]) == [
            f"a_b_{digest('a.b')}",
            f"a_b_{digest('a b')}",
        ]
        assert provider_safe_names(["a b", "a.b"]) == [
            f"a_b_{digest('a b')}",
            f"a_b_{digest('a.b')}",
        ]

    def test_an_empty_name(self):
        """An empty name gets a name too."""
        assert provider_safe_names([""]) == [f"_{digest('')}"]

    def test_a_hashed_name_another_tool_has_is_hashed_again(self):
        """files_read_<hash of files.read> listed by the server too: files.read gets the hash
        of its name with a count, and every tool of the listing keeps a name."""
        taken = f"files_read_{digest('files.read')}"
        assert provider_safe_names(["files.read", "files_read", taken]) == [
            f"files_read_{digest('files.read', 1)}",
            "files_read",
            taken,
        ]

    def test_each_hashed_name_a_listing_takes_moves_it_on(self):
        """A server listing the first hashed names of a tool: the first count that is free."""
        taken = [f"files_read_{digest('files.read', count)}" for count in range(3)]
        assert provider_safe_names(["files.read", "files_read", *taken])[0] == (
            f"files_read_{digest('files.read', 3)}"
        )

    def test_a_hashed_name_never_takes_a_renamed_one(self):
        """'files read 601e4eb6'-like names renamed to files.read's hashed name: that one is
        kept by its owner, files.read's is hashed again."""
        clash = f"files read {digest('files.read')}"
        assert provider_safe_names(["files.read", "files_read", clash]) == [
            f"files_read_{digest('files.read', 1)}",
            "files_read",
            f"files_read_{digest('files.read')}",
        ]

    def test_the_order_of_the_listing_does_not_change_a_name(self):
        """The same names listed in any order get the same names."""
        names = ["files.read", "files_read", f"files_read_{digest('files.read')}", "a.b", "a b"]
        expected = dict(zip(names, provider_safe_names(names), strict=True))
        for order in itertools.permutations(names):
            assert provider_safe_names(list(order)) == [expected[name] for name in order]

    def test_duplicates_are_refused(self):
        """Two equal names cannot be told apart: ValueError."""
        with pytest.raises(ValueError, match=r"listed more than once: \['x'\]"):
            provider_safe_names(["x", "x"])

    @given(st.lists(st.text(max_size=80), unique=True, max_size=8))
    def test_always_valid_distinct_and_stable(self, names):
        """Any distinct names: valid, distinct results; valid names kept; the same every time."""
        result = provider_safe_names(names)
        assert all(PROVIDERS.fullmatch(name) for name in result)
        assert len(set(result)) == len(result)
        assert all(
            new == old for old, new in zip(names, result, strict=True) if PROVIDERS.fullmatch(old)
        )
        assert provider_safe_names(names) == result

    @given(st.lists(st.text(max_size=80), unique=True, max_size=6), st.data())
    def test_names_a_listing_adds_to_clash_still_get_distinct_names(self, names, data):
        """A hostile listing that adds the names its tools would get (hashed or not): still
        valid, distinct names, valid ones kept."""
        given_names = provider_safe_names(names)
        added = data.draw(st.lists(st.sampled_from(given_names), unique=True)) if names else []
        listing = names + [name for name in added if name not in names]
        result = provider_safe_names(listing)
        assert all(PROVIDERS.fullmatch(name) for name in result)
        assert len(set(result)) == len(result)
        assert all(
            new == old for old, new in zip(listing, result, strict=True) if PROVIDERS.fullmatch(old)
        )
