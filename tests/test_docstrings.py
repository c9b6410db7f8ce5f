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


# The same docstring in each style: parameters, other sections, returns, raises.
GOOGLE_SECTIONS = """Find users.

    Args:
        name: The user name.

    Keyword Args:
        limit: How many.

    Returns:
        The users.

    Raises:
        ValueError: Never.

    Example:
        find("ann")

    Note:
        Slow on big tables.

    Custom:
        Kept too.
    """

NUMPY_SECTIONS = """Find users.

    Parameters
    ----------
    name : str
        The user name.

    Other Parameters
    ----------------
    limit : int
        How many.

    Returns
    -------
    list
        The users.

    Raises
    ------
    ValueError
        Never.

    Examples
    --------
    find("ann")

    Notes
    -----
    Slow on big tables.

    See Also
    --------
    find_groups
    """

REST_SECTIONS = """Find users.

    .. note:: Slow on big tables.

    :param name: The user name.
    :keyword limit: How many.
    :returns: The users.
    :raises ValueError: Never.
    :seealso: find_groups
    """

EPYDOC_SECTIONS = """Find users.

    Slow on big tables.

    @param name: The user name.
    @keyword limit: How many.
    @return: The users.
    @raise ValueError: Never.
    @see: find_groups
    """


class TestSections:
    @pytest.mark.parametrize(
        ("doc", "description"),
        [
            pytest.param(
                GOOGLE_SECTIONS,
                'Find users.\n\nExample:\n    find("ann")\n\nNote:\n    Slow on big tables.'
                "\n\nCustom:\n    Kept too.",
                id="google",
            ),
            pytest.param(
                NUMPY_SECTIONS,
                'Find users.\n\nExamples\n--------\nfind("ann")\n\nNotes\n-----\n'
                "Slow on big tables.\n\nSee Also\n--------\nfind_groups",
                id="numpy",
            ),
            pytest.param(
                REST_SECTIONS,
                "Find users.\n\n.. note:: Slow on big tables.\n\n:seealso: find_groups",
                id="rest",
            ),
            pytest.param(
                EPYDOC_SECTIONS,
                "Find users.\n\nSlow on big tables.\n\n@see: find_groups",
                id="epydoc",
            ),
        ],
    )
    def test_one_rule_for_every_style(self, doc, description):
        """Parameters, returns, raises and yields are taken out; every other section stays."""
        assert parse_docstring(doc) == (
            description,
            {"name": "The user name.", "limit": "How many."},
        )

    def test_yields_and_warns_are_taken_out(self):
        """Yields and Warns describe the call, like Returns and Raises."""
        doc = """Stream rows.

        Yields:
            One row.

        Warns:
            UserWarning: On empty tables.
        """
        assert parse_docstring(doc) == ("Stream rows.", {})


class TestUnreadableSections:
    @pytest.mark.parametrize(
        ("doc", "kept", "params", "line"),
        [
            pytest.param(
                "Do it.\n\nArgs:\n    x - no colon\n    y: fine\n\nReturns:\n    r\n",
                "Do it.\n\nArgs:\n    x - no colon\n    y: fine",
                {},
                "x - no colon",
                id="google",
            ),
            pytest.param(
                "Do it.\n\n:param x - no colon\n:param y: fine\n",
                "Do it.\n\n:param x - no colon",
                {"y": "fine"},
                ":param x - no colon",
                id="rest",
            ),
            pytest.param(
                "Do it.\n\n@param x no colon\n@param y: fine\n",
                "Do it.\n\n@param x no colon",
                {"y": "fine"},
                "@param x no colon",
                id="epydoc",
            ),
        ],
    )
    def test_stay_as_prose_with_a_warning(self, doc, kept, params, line):
        """A section docstring-parser cannot read stays as written, and a warning names it."""
        with pytest.warns(UserWarning, match=r"^App\.run: cannot read the parameter") as caught:
            assert parse_docstring(doc, where="App.run") == (kept, params)
        [warning] = caught
        assert f": {line!r} (" in str(warning.message)

    def test_without_a_source_the_warning_still_names_the_tool(self):
        """Without a function to point at, the warning points at the docstring itself."""
        with pytest.warns(UserWarning, match=r"^a tool: cannot read") as caught:
            parse_docstring(":param x - no colon\n")
        assert (caught[0].filename, caught[0].lineno) == ("<docstring>", 1)


class TestParameterNames:
    """Entries whose name is not a lone identifier still describe their parameters."""

    def test_numpy_names_several_parameters_in_one_entry(self):
        doc = """Compute.

        Parameters
        ----------
        a, b : int
            Both numbers.
        c : int
            The third.
        """
        assert parse_docstring(doc) == (
            "Compute.",
            {"a": "Both numbers.", "b": "Both numbers.", "c": "The third."},
        )

    def test_a_google_type_with_a_colon_in_it(self):
        """Napoleon's own example spells a type ``(:obj:`int`, optional)``."""
        doc = """Compute.

        Args:
            a (int, optional): A desc.
            b (:obj:`int`, optional): B desc. Defaults to 1.
            c: Plain: with a colon.
            *rest: Ignored by tools, named all the same.
        """
        assert parse_docstring(doc) == (
            "Compute.",
            {
                "a": "A desc.",
                "b": "B desc. Defaults to 1.",
                "c": "Plain: with a colon.",
                "rest": "Ignored by tools, named all the same.",
            },
        )


class TestStyleDetection:
    """One stray line picked the style of the whole docstring, dropping every parameter's text."""

    @pytest.mark.parametrize(
        "stray",
        [
            pytest.param(":class:`User` objects are returned.", id="rest-role"),
            pytest.param("---", id="numpy-rule"),
            pytest.param("@here is not allowed.", id="epydoc-mention"),
        ],
    )
    def test_a_stray_line_of_another_style_does_not_switch_styles(self, stray):
        """The Google Args section is still read; the stray line stays in the prose."""
        doc = f"""Find users.

        {stray}

        Args:
            name: The user name.
        """
        assert parse_docstring(doc) == (f"Find users.\n\n{stray}", {"name": "The user name."})

    def test_the_style_describing_the_functions_parameters_wins(self):
        """Given the parameter names, the sections that describe them decide."""
        doc = """Run.

        :param unrelated: Not a parameter of this function.

        Args:
            query: The query.
        """
        assert parse_docstring(doc, parameters=["self", "query"]) == (
            "Run.\n\n:param unrelated: Not a parameter of this function.",
            {"query": "The query."},
        )
