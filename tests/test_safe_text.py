"""Text made safe for a model (``_safe_text.py``): paths, reprs, secrets, bounds, valid Unicode.

The exact texts are the contract, so they are asserted exactly. Time on hostile
input is guarded by running it in a subprocess with a generous timeout: a
regression to quadratic scrubbing takes hours there, and fails instead of
hanging.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest
from pydantic import BaseModel

from llm_worker._safe_text import MAX_ERROR_TEXT, model_safe_text, safe_text, valid_unicode


@pytest.fixture(autouse=True)
def _names_read_again(monkeypatch):
    """The secret names are listed again when the environment's size changes: a test's
    setenv after another test's (same size, another name) must be seen too."""
    from llm_worker import _safe_text

    monkeypatch.setattr(_safe_text._SecretNames, "size", -1)


class TestPaths:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("no record for /flag.txt", "no record for <path>"),
            ("cannot read /etc/shadow: denied", "cannot read <path>: denied"),
            (
                "cannot read /Users/bob/Library/Application Support/Claude/config.json now",
                "cannot read <path> now",
            ),
            ("see file:///home/bob/notes.txt first", "see <path> first"),
            (r"cannot open \\server\share\dir\file.txt", "cannot open <path>"),
            (r"cannot open C:\Program Files\App\app.exe today", "cannot open <path> today"),
            ("cannot open C:/Users/bob/key.txt", "cannot open <path>"),
            ("keys in ~/.ssh/id_rsa", "keys in <path>"),
            ("--config=/etc/app.toml is unreadable", "--config=<path> is unreadable"),
        ],
    )
    def test_absolute_paths_become_path(self, text, expected):
        """Absolute paths of every form (top-level files, spaces, file URLs, UNC, drives) go."""
        assert safe_text(text) == expected

    @pytest.mark.parametrize(
        "text",
        [
            "see https://example.com/a/b/c and data/input.csv",
            "a / b, km/h, and/or 1/2",
            "ftp://host/x and s3://bucket/key",
        ],
    )
    def test_urls_relative_paths_and_slashes_are_kept(self, text):
        """URLs, relative paths and slashes inside words are not paths of this machine."""
        assert safe_text(text) == text

    def test_a_path_followed_by_words_keeps_the_words(self):
        """A space ends a path unless more path follows."""
        assert safe_text("copy /srv/a.txt to /srv/b.txt failed") == "copy <path> to <path> failed"


class TestReprs:
    def test_nested_and_local_reprs_lose_their_addresses(self):
        """Reprs holding ``<locals>`` or another repr keep their words, not their addresses."""
        assert safe_text("<function outer.<locals>.inner at 0x7f00deadbeef>") == (
            "<function outer.<locals>.inner>"
        )
        assert safe_text("<bound method W.poke of <app.models.W object at 0x7f3a>>") == (
            "<bound method W.poke of <W object>>"
        )
        assert safe_text("<function <lambda> at 0x10>") == "<function <lambda>>"


class TestSecrets:
    def test_environment_secrets_are_redacted(self, monkeypatch):
        """Values of *_KEY, *_TOKEN, *_SECRET and *PASSWORD* variables never reach the model."""
        monkeypatch.setenv("SERVICE_API_KEY", "sk-live-4f8a9b")
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_0123456789")
        monkeypatch.setenv("CLIENT_SECRET", "s3cr3t-value")
        monkeypatch.setenv("DB_PASSWORD_MAIN", "hunter2-long")
        text = "keys sk-live-4f8a9b ghp_0123456789 s3cr3t-value hunter2-long"
        assert safe_text(text) == "keys <redacted> <redacted> <redacted> <redacted>"

    def test_a_secret_set_after_startup_is_redacted(self, monkeypatch):
        """The environment is read at each use: a new value, or a new variable, counts."""
        monkeypatch.setenv("LATE_TOKEN", "first-value")
        assert safe_text("got first-value") == "got <redacted>"
        monkeypatch.setenv("LATE_TOKEN", "second-value")
        assert safe_text("got first-value, second-value") == "got first-value, <redacted>"

    def test_short_and_ordinary_values_are_left(self, monkeypatch):
        """A value under six characters, or of a variable not named as a secret, stays."""
        monkeypatch.setenv("DEBUG_KEY", "1")
        monkeypatch.setenv("HOME_DIR", "carefully")
        assert safe_text("1 carefully") == "1 carefully"

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                "GET https://api.example.com/v1/items?api_key=abc123&page=2 failed",
                "GET https://api.example.com/v1/items?api_key=<redacted>&page=2 failed",
            ),
            ("refused token=xyz987 for monkey=5", "refused token=<redacted> for monkey=5"),
            (
                "cannot connect to postgresql://admin:pa55word@db.internal:5432/app",
                "cannot connect to postgresql://admin:<redacted>@db.internal:5432/app",
            ),
            (
                "bad config {'user': 'bob', 'password': 'pa55', \"apiKey\": \"k-1\"}",
                "bad config {'user': 'bob', 'password': '<redacted>', \"apiKey\": \"<redacted>\"}",
            ),
            ("Authorization: Bearer eyJhbGciOi.J9x-y", "Authorization: Bearer <redacted>"),
        ],
    )
    def test_secrets_in_the_text_are_redacted(self, text, expected):
        """Query values and fields named as secrets, DSN passwords and bearer tokens go."""
        assert safe_text(text) == expected


class TestBounds:
    def test_long_text_is_capped(self):
        """At most MAX_ERROR_TEXT characters, ending in an ellipsis."""
        assert safe_text("x" * 10_000) == "x" * (MAX_ERROR_TEXT - 1) + "…"

    def test_only_the_start_of_a_text_is_read(self):
        """What lies past the first 2 000 characters cannot change the result."""
        head = "word " * 300
        assert safe_text(head + "a" * 5000) == safe_text(head + "<" + "a." * 50_000)

    def test_the_word_the_cut_goes_through_is_dropped(self, monkeypatch):
        """A secret the cut would halve is not shown in part."""
        monkeypatch.setenv("HALVED_TOKEN", "T" * 40)
        text = "w " * 990 + "T" * 40 + " tail"
        assert "T" not in safe_text(text)

    @pytest.mark.parametrize("lead", range(0, 160, 7))
    def test_no_part_of_a_secret_at_the_windows_edge_is_shown(self, monkeypatch, lead):
        """Copies of a secret redacted before the edge made the text too short to cut, and
        the copy the slice went through was shown in part (106 of 107 characters)."""
        secret = "sk-live-" + "Q7f3Zp9K" * 12 + "END"
        monkeypatch.setenv("PAYMENTS_API_KEY", secret)
        text = safe_text("x" * lead + " " + " ".join([secret] * 30))
        assert not any(secret[:k] in text for k in range(8, len(secret) + 1)), text

    def test_a_long_text_without_spaces_is_kept_with_secrets_set(self, monkeypatch):
        """Dropping the slice's last word wiped such a text whole (compact JSON, a list
        of ids) whenever any secret was set: only a secret's beginning is dropped."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-0123456789abcdef")
        assert safe_text("x" * 5_000) == "x" * (MAX_ERROR_TEXT - 1) + "…"
        assert safe_text("bad ids: " + "id," * 3_000).startswith("bad ids: id,id,id,")

    def test_no_part_of_a_passphrase_at_the_windows_edge_is_shown(self, monkeypatch):
        passphrase = "correct horse battery staple and more words"
        monkeypatch.setenv("DB_PASSWORD", passphrase)
        for lead in range(0, 60, 3):
            text = safe_text("x" * lead + " " + " ".join([passphrase] * 60))
            assert not any(passphrase[:k] in text for k in range(7, len(passphrase))), text

    @pytest.mark.parametrize(
        "shown",
        [
            "https://h/o/wJalrXUtnFEMI/K7MDENG%2BbP%3D",  # quote(): "/" kept, in a path
            "?x=wJalrXUtnFEMI%2fK7MDENG%2bbP%3d",  # lower-case escapes
            '{"k": "wJalrXUtnFEMI\\/K7MDENG+bP="}',  # JSON's optional \/
        ],
    )
    def test_a_secret_in_other_encodings_is_redacted(self, monkeypatch, shown):
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bP=")
        assert "wJalrXUtnFEMI" not in safe_text(shown)

    def test_a_secret_in_a_repr_or_a_url_is_redacted(self, monkeypatch):
        """Exceptions show values as reprs (backslashes doubled) or URL-encoded."""
        monkeypatch.setenv("DB_PASSWORD", "Tr0ub4dor\\&3xyz")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY+x=")
        assert safe_text(str(KeyError("Tr0ub4dor\\&3xyz"))) == "'<redacted>'"
        url = "for url https://s3.example.com/b?sk=wJalrXUtnFEMI%2FK7MDENG%2FbPxRfiCY%2Bx%3D"
        assert safe_text(url) == "for url https://s3.example.com/b?sk=<redacted>"

    def test_hostile_texts_take_linear_time(self):
        """Texts built to make regular expressions backtrack are scrubbed at once.

        (The object-repr pattern once took 8 s on ``"<" + "a." * 15000``.)
        """
        code = (
            "from llm_worker._safe_text import safe_text\n"
            "n = 500_000\n"
            "for bad in ['<' + 'a.' * n, '/' + 'a ' * n, '/a' * n, 'a=' * n, \"'a': '\" * n,\n"
            "            '\\\\\\\\' * n, 'x://' * n, '<' * n + ' at 0x1>', '1' * n, 'a:b@' * n,\n"
            "            \"a='\" * n, 'bearer a=\"' * n, 'Authorization: x ' * n, 'x://a' * n]:\n"
            "    safe_text(bad)\n"
            "print('done')\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr


@dataclasses.dataclass
class Settings:
    api_key: str
    password: str
    db_url: str


class ModelSettings(BaseModel):
    api_key: str
    client_secret: str
    token: str
    region: str


class TestQuotedSecrets:
    def test_a_dataclass_repr_shows_no_secret(self):
        """Fields named as secrets in a dataclass's repr are redacted, quotes kept."""
        settings = Settings("sk-live-abcdef123", "hunter22", "postgres://app:pw12345@db/x")
        assert model_safe_text(ValueError(f"bad config: {settings}")) == (
            "bad config: Settings(api_key='<redacted>', password='<redacted>',"
            " db_url='postgres://app:<redacted>@db/x')"
        )

    def test_a_pydantic_repr_shows_no_secret(self):
        """The same in a pydantic model's repr; other fields stay."""
        settings = ModelSettings(
            api_key="sk-live-abcdef123", client_secret="cs-998877", token="tok-556677", region="eu"
        )
        assert model_safe_text(ValueError(f"bad config: {settings!r}")) == (
            "bad config: ModelSettings(api_key='<redacted>', client_secret='<redacted>',"
            " token='<redacted>', region='eu')"
        )

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                "connect() got api_key='sk-live-abcdef123', password=\"hunter22\"",
                "connect() got api_key='<redacted>', password=\"<redacted>\"",
            ),
            ("password: 'hunter22' was rejected", "password: '<redacted>' was rejected"),
            ('invalid token: "tok-556677"', 'invalid token: "<redacted>"'),
            (
                repr({"password": 'it\'s "quoted" and \\ more', "user": "bob"}),
                "{'password': '<redacted>', 'user': 'bob'}",
            ),
            (
                repr({"secret": "it's", "token": "tok'\"9"}),
                "{'secret': \"<redacted>\", 'token': '<redacted>'}",
            ),
            (
                json.dumps({"password": 'pa"ss\\', "n": 1}),
                '{"password": "<redacted>", "n": 1}',
            ),
        ],
    )
    def test_quoted_values_of_secret_names_are_redacted(self, text, expected):
        """`name='...'`, `name: "..."`, `'name': '...'` and JSON, escapes included."""
        assert safe_text(text) == expected

    def test_a_quoted_value_the_cut_went_through_is_redacted(self):
        """A value with no closing quote (longer than what is read) is redacted to its end."""
        assert safe_text("password='" + "s" * 3_000 + "'") == "password='<redacted>'"

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                "headers={'Authorization': 'Basic dXNlcjpodW50ZXIy', 'X-Api-Key': 'abc123456'}",
                "headers={'Authorization': 'Basic <redacted>', 'X-Api-Key': '<redacted>'}",
            ),
            ('{"authorization": "Token tok-556677"}', '{"authorization": "Token <redacted>"}'),
            ("{'Authorization': 'tok-556677'}", "{'Authorization': '<redacted>'}"),
            (
                "Authorization: Basic dXNlcjpodW50ZXIy\nHost: x",
                "Authorization: Basic <redacted>\nHost: x",
            ),
            (
                'Proxy-Authorization: Digest username="bob", realm="r@example.com",'
                ' nonce="dcd98b", qop=auth, response="6629fae4" was refused',
                "Proxy-Authorization: Digest <redacted> was refused",
            ),
            (
                "authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam,"
                " SignedHeaders=host, Signature=5d672d79 was refused",
                "authorization: AWS4-HMAC-SHA256 <redacted> was refused",
            ),
        ],
    )
    def test_authorization_headers_are_redacted_whatever_their_scheme(self, text, expected):
        """Basic, Token, Digest, AWS4... (not only Bearer); the scheme is kept."""
        assert safe_text(text) == expected

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                "cannot reach https://sk-live-abcdef123@api.example.com/v1",
                "cannot reach https://<redacted>@api.example.com/v1",
            ),
            (
                "cannot reach redis://:s3cret-pw@cache:6379/0",
                "cannot reach redis://:<redacted>@cache:6379/0",
            ),
        ],
    )
    def test_a_token_as_a_urls_userinfo_is_redacted(self, text, expected):
        """A userinfo without a password is a token as often as a user name."""
        assert safe_text(text) == expected

    @pytest.mark.parametrize(
        "text",
        [
            "token count: 5, password reset failed",
            "user='bob', role=\"admin\", note: 'it\\'s fine'",
            "{'user': 'bob', 'note': \"it's the key\"}",
            "Authorization failed: no header",
            "see https://example.com/a?b=c@d",
            "Missing key: 'user_id'",
            "Unknown sort_key: 'created_at'",
            "primary_key: 'id'",
            "auth: 'oauth2'",
            "signature: 'def f(x)'",
            "Missing authorization: user lacks role admin",
            'KeyError: no key: "name" in the mapping',
        ],
    )
    def test_ordinary_words_and_fields_are_kept(self, text):
        """Secret-like words without a value, and values of other names, stay readable."""
        assert safe_text(text) == text

    def test_secret_patterns_take_linear_time_on_any_length(self):
        """The secret patterns scrub 1 MB texts built to make them backtrack at once, applied
        directly (without the window's help): a quadratic one takes hours there, and times out."""
        code = textwrap.dedent(
            r"""
            from llm_worker import _safe_text as s

            for pattern, head, unit in [
                (s._QUOTED_FIELD, "", "'"),
                (s._QUOTED_FIELD, "", '"'),
                (s._QUOTED_FIELD, "", "a='"),
                (s._QUOTED_FIELD, "", "'a':"),
                (s._QUOTED_FIELD, "", "'a'"),
                (s._QUOTED_FIELD, "", "a:'b"),
                (s._QUOTED_FIELD, "", "a: '\\"),
                (s._QUOTED_FIELD, "", "\\'"),
                (s._QUOTED_FIELD, "a='", "\\x"),  # escapes, and no closing quote
                (s._QUOTED_FIELD, 'a = "', "\\\\"),
                (s._QUOTED_FIELD, "", "a" * 64 + " "),  # names as long as allowed
                (s._QUOTED_FIELD, "", "a"),
                (s._AUTHORIZATION, "", "authorization: a "),
                (s._AUTHORIZATION, "", 'Authorization: Digest a="'),
                (s._AUTHORIZATION, "", "bearer a=b, "),
                (s._AUTHORIZATION, "bearer ", "a=b, "),  # one list of auth-params
                (s._AUTHORIZATION, "bearer ", 'a="\\'),
                (s._AUTHORIZATION, "bearer ", "a ="),
                (s._AUTHORIZATION, "bearer ", "a-"),
                (s._URL_USERINFO, "", "a://a:"),
                (s._URL_USERINFO, "x://", "a"),
                (s._URL_USERINFO, "x://", "a:"),
            ]:
                pattern.sub("", head + unit * (1_000_000 // len(unit)))
            print("done")
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr


class BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class TestModelSafeText:
    def test_a_broken_str_gives_the_class_name(self):
        """An exception whose ``__str__`` raises is named by its class."""
        assert model_safe_text(BrokenStr()) == "BrokenStr"

    def test_bytes_filenames_are_hidden(self):
        """An OSError's bytes file name is hidden like a str one."""
        exc = FileNotFoundError(2, "No such file or directory", b"/srv/app/\xff.txt")
        assert model_safe_text(exc) == "[Errno 2] No such file or directory: '<path>'"


class TestValidUnicode:
    def test_lone_surrogates_are_replaced(self):
        """A lone surrogate (from a non-UTF-8 file name) becomes U+FFFD; the rest stays."""
        assert valid_unicode("caf\udce9 ok") == "caf\ufffd ok"
        assert valid_unicode("é 😀") == "é 😀"
        assert valid_unicode("plain") == "plain"
