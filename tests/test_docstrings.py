"""``_docstrings.parse_docstring``: docstring → (tool description, parameter descriptions)."""

import pytest

from llm_worker._docstrings import parse_docstring

GOOGLE = """Find users.

    Looks them up
    by name.

    Args:
        name: The user name.
        limit (int): How many
            to return.

    Returns:
        The users.

    Raises:
        ValueError: Never.
    """

NUMPY = """Find users.

    Looks them up
    by name.

    Parameters
    ----------
    name : str
        The user name.
    limit : int
        How many
        to return.

    Returns
    -------
    list
        The users.

    Raises
    ------
    ValueError
        Never.
    """

REST = """Find users.

    Looks them up
    by name.

    :param name: The user name.
    :param limit: How many
        to return.
    :type limit: int
    :returns: The users.
    :raises ValueError: Never.
    """

EPYDOC = """Find users.

    Looks them up
    by name.

    @param name: The user name.
    @param limit: How many
        to return.
    @type limit: int
    @return: The users.
    @raise ValueError: Never.
    """

EXPECTED_PARAMS = {"name": "The user name.", "limit": "How many\nto return."}


class TestParseDocstring:
    @pytest.mark.parametrize(
        "doc",
        [
            pytest.param(GOOGLE, id="google"),
            pytest.param(NUMPY, id="numpy"),
            pytest.param(REST, id="rest"),
            pytest.param(EPYDOC, id="epydoc"),
        ],
    )
    def test_styles(self, doc):
        """Each style gives the prose without sections, and every parameter's text."""
        assert parse_docstring(doc) == (
            "Find users.\n\nLooks them up\nby name.",
            EXPECTED_PARAMS,
        )

    def test_short_description_followed_directly_by_long(self):
        """Without a blank line after the summary, the line break is kept as is."""
        doc = """Run a search.
        Searches the database.

        Args:
            query: What to look for.
        """
        assert parse_docstring(doc) == (
            "Run a search.\nSearches the database.",
            {"query": "What to look for."},
        )

    def test_short_description_only_with_section(self):
        """A one-line summary and an Args section."""
        doc = """Add.

        Args:
            a: First.
            b: Second.
        """
        assert parse_docstring(doc) == ("Add.", {"a": "First.", "b": "Second."})

    def test_prose_only(self):
        """A docstring without sections is all description, cleaned like inspect.cleandoc."""
        doc = """Find users.
        Looks them up

            with an indented line.
        """
        assert parse_docstring(doc) == (
            "Find users.\nLooks them up\n\n    with an indented line.",
            {},
        )

    def test_prose_mentioning_section_words(self):
        """Words like 'Args' or 'Returns' inside prose are not sections."""
        doc = "Returns the args: all of them.\nNotes are kept."
        assert parse_docstring(doc) == ("Returns the args: all of them.\nNotes are kept.", {})

    def test_one_line(self):
        """A one-line docstring is its own description."""
        assert parse_docstring("Say hello.") == ("Say hello.", {})

    @pytest.mark.parametrize("doc", [None, "", " ", "\n\n", "\t \n  "])
    def test_none_or_blank(self, doc):
        """None, empty and whitespace-only docstrings have no description."""
        assert parse_docstring(doc) == (None, {})

    @pytest.mark.parametrize(
        "doc",
        [
            pytest.param("Args:\n    x: The x.\n", id="google"),
            pytest.param("Parameters\n----------\nx : int\n    The x.\n", id="numpy"),
            pytest.param(":param x: The x.\n", id="rest"),
            pytest.param("@param x: The x.\n", id="epydoc"),
        ],
    )
    def test_sections_only(self, doc):
        """A docstring with only a parameter section has no description but its parameters."""
        assert parse_docstring(doc) == (None, {"x": "The x."})

    def test_parameter_without_text_is_left_out(self):
        """A parameter listed without a description gets none."""
        doc = """Do it.

        :param x: The x.
        :type y: int
        """
        assert parse_docstring(doc) == ("Do it.", {"x": "The x."})

    def test_returns_only(self):
        """Return and raise sections never reach the description."""
        doc = """Compute.

        Returns:
            A number.
        """
        assert parse_docstring(doc) == ("Compute.", {})
