"""``llm-worker schema``: the tool schemas of registry classes, as stable JSON, and a CI check.
``llm-worker mcp serve``: the tools of a ``ToolServer`` as an MCP server.

    llm-worker schema TARGET... [--format FMT] [--strict] [-o FILE | --check FILE]
    llm-worker mcp serve FACTORY [--transport stdio|http] [--host H] [--port N] [--path P]
        [--allow-host H]... [--allow-origin O]... [--auth-token-env VAR | --auth-token T]
        [--session-idle-timeout S] [--max-sessions N]
        [--tool-timeout S] [--max-input-bytes N] [--max-result-bytes N]

TARGET is ``package.module:Class`` (``Class`` may be dotted, ``Outer.Inner``) or
``package.module`` (every ``@tool_registry`` class defined at the top level of
that module; a subclass of one counts, as ``is_tool_registry`` says). The
classes are imported, never instantiated: the schemas come from
``tool_metas(cls)``. The current directory is importable, as with
``python -m``. A file path (``tools.py``, ``pkg/mod.py``) is refused before
anything is imported, with the module name to give instead.

Output: the tools of all targets sorted by name, in ``--format`` (see
``llm_worker._formats``), as ``json.dumps(sort_keys=True, indent=2,
ensure_ascii=False)`` plus a newline, so the same tools give the same bytes.

What the targets print while they are imported goes to stderr, at the file
descriptor level too (``os.write(1, ...)``, a C extension's banner); so does
what they print at exit (``atexit``), after the output. The ``-o`` and
``--check`` paths are read from the directory the command started in (a target
may ``os.chdir()`` as it is imported), and a thread a target started and left
running (not a daemon) does not keep the command from ending, once its output
is written (``_exit_now_if_threads_run``).

Exit status: 0 done (or, with ``--check``, the file is up to date); 1 the
``--check`` file is out of date or missing (a unified diff and the command that
regenerates it, quoted for the system's shell, are printed), or the reader of
stdout left early; 2 a bad target (one without tools included) or usage error,
or stdout cannot be written, explained in one line on stderr; 2 also for an
unexpected error (a bug in the target or in llm-worker): one line naming the
exception, then its traceback.

``mcp serve``: FACTORY is ``package.module:function``, a function called with no
arguments that returns a ``ToolServer`` (or ``ToolServerHandle``) with its tools
registered. The MCP SDK (the ``mcp`` extra) is imported only by this command. Over
stdio, stdout carries nothing but the protocol: what the factory prints while it is
imported and called goes to stderr (file descriptor 1 too), as do the logs. Exit
status: 0 when the client closes the connection (stdio), 2 for a bad FACTORY, usage
error or missing extra (one line on stderr), 1 when the HTTP port cannot be bound,
130 on Ctrl-C. Over stdio the process exits as soon as the client has gone, even
while a plain-``def`` tool still runs in a thread (Python would otherwise wait for
that thread).

Imported only by the ``llm-worker`` console script and ``python -m llm_worker``.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import importlib
import inspect
import json
import logging
import math
import os
import re
import shlex
import stat
import sys
import threading
import time
import traceback
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import BinaryIO, Literal, TextIO, cast

from ._decorators import tool_metas
from ._formats import FORMATS, STRICT_FORMATS, FormatName, export_tools
from ._interrupt import run_until_ctrl_c
from ._limits import Limits
from ._meta import ToolMeta
from ._registry import is_tool_registry
from ._server import ToolServer, ToolServerHandle

__all__ = ["main", "render_schema"]

_DEFAULT_PROG = "llm-worker"


class _UsageError(Exception):
    """A problem the user can fix: reported as one line, exit status 2."""


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Without ``argv`` it is the program (the console script, ``python -m``): once
    the command is done, stdout points at stderr, so what the targets' code
    prints at exit (an ``atexit`` handler) does not end up after the output; and
    a thread their code started and left running (a pool, an exporter) does not
    keep the process from ending (``_exit_now_if_threads_run``).
    """
    prog = prog or _DEFAULT_PROG
    try:
        status = _main(argv, prog)
    finally:
        if argv is None:
            _stdout_to_stderr_for_good()
    if argv is None:
        _exit_now_if_threads_run(status, logging.getLogger("llm_worker"), _DONE)
    return status


def _main(argv: Sequence[str] | None, prog: str) -> int:
    args = _parser(prog).parse_args(argv)
    # Targets are imported like `python -m` would: with the current directory importable.
    cwd = os.getcwd()
    add_cwd = cwd not in sys.path and "" not in sys.path
    if add_cwd:
        sys.path.insert(0, cwd)
    command = "mcp serve" if args.command == "mcp" else args.command
    try:
        if args.command == "mcp":
            return _mcp_serve(args, prog)
        return _schema(args, prog)
    except _UsageError as exc:
        print(f"{prog} {command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left (`| head`): what is left to print goes nowhere, not into a
        # traceback at exit; as Python's docs on SIGPIPE do it.
        _discard_stdout()
        return 1
    except (KeyboardInterrupt, SystemExit):
        raise
    # A bug (the target's or ours): not the 1 of an out-of-date file, nor a bare traceback
    # for a BaseException Python would end the process with (a stray CancelledError).
    except BaseException as exc:
        print(
            f"{prog} {command}: error: unexpected {_describe(exc)} "
            f"(a bug in llm-worker or in the target; the traceback follows)",
            file=sys.stderr,
        )
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        return 2
    finally:
        if add_cwd and cwd in sys.path:
            sys.path.remove(cwd)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Tools of llm-worker registry classes: provider tool schemas, and MCP serving.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    schema = commands.add_parser(
        "schema",
        help="print or check the tool schemas of registry classes",
        description=(
            "Print the tools of the given @tool_registry classes, sorted by name, as stable "
            "JSON; or check that a file holds exactly that (exit 1 and a diff if not)."
        ),
    )
    schema.add_argument(
        "targets",
        nargs="+",
        metavar="TARGET",
        help="package.module:Class, or package.module for every registry class in it",
    )
    schema.add_argument(
        "--format",
        choices=FORMATS,
        default="neutral",
        help="the provider's tool format (default: neutral)",
    )
    schema.add_argument(
        "--strict",
        action="store_true",
        help="OpenAI strict mode (only with --format openai or openai-responses)",
    )
    output = schema.add_mutually_exclusive_group()
    output.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    output.add_argument(
        "--check",
        metavar="FILE",
        help="exit 1 with a diff if FILE differs from what would be written (for CI)",
    )
    _add_mcp_parser(commands)
    return parser


def _add_mcp_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve tools over the Model Context Protocol (needs the mcp extra)",
        description="Model Context Protocol commands (needs: pip install 'llm-worker[mcp]').",
    )
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")
    serve = mcp_commands.add_parser(
        "serve",
        help="serve the tools of a ToolServer as an MCP server",
        description=(
            "Call FACTORY, a function that returns a ToolServer with its tools registered, "
            "and serve those tools as an MCP server: over stdio (for a desktop or IDE "
            "host that starts this command) or streamable HTTP."
        ),
    )
    serve.add_argument(
        "factory",
        metavar="FACTORY",
        help="package.module:function, called with no arguments, returning a ToolServer",
    )
    serve.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default) or streamable HTTP",
    )
    serve.add_argument("--host", help="HTTP: the address to listen on (default: 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, help="HTTP: the port to listen on (default: 8000; 0 picks a free one)"
    )
    serve.add_argument("--path", help="HTTP: the endpoint path (default: /mcp)")
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="HTTP: also accept requests whose Host header is HOST (repeatable; the loopback "
        "names and --host are always accepted)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="HTTP: also accept browser requests from ORIGIN, e.g. https://app.example.com "
        "(repeatable)",
    )
    token = serve.add_mutually_exclusive_group()
    token.add_argument(
        "--auth-token-env",
        metavar="VAR",
        help="HTTP: require 'Authorization: Bearer <token>', the token read from the "
        "environment variable VAR",
    )
    token.add_argument(
        "--auth-token",
        metavar="TOKEN",
        help="HTTP: the same with the token given here (other local users can see it in the "
        "process list; prefer --auth-token-env)",
    )
    serve.add_argument(
        "--session-idle-timeout",
        type=float,
        metavar="SECONDS",
        help="HTTP: close a session idle this long (default: 1800)",
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        metavar="N",
        help="HTTP: at most N sessions open at once; more get 503 (default: 10000)",
    )
    # Any of these holds every call to the Worker's Limits (these values, the others'
    # defaults); without them, each tool's own limits only.
    serve.add_argument(
        "--tool-timeout",
        type=float,
        metavar="SECONDS",
        help="every call's timeout (with any of these three: the Worker's limits apply, "
        "default 300)",
    )
    serve.add_argument(
        "--max-input-bytes",
        type=int,
        metavar="N",
        help="refuse larger arguments (default with the limits: 1000000)",
    )
    serve.add_argument(
        "--max-result-bytes",
        type=int,
        metavar="N",
        help="cut longer results, with a note (default with the limits: 100000); a typed "
        "result (one with an outputSchema) cut so is an isError result, without "
        "structuredContent (cut, it conforms to no schema)",
    )


def _schema(args: argparse.Namespace, prog: str) -> int:
    if args.strict and args.format not in STRICT_FORMATS:
        raise _UsageError("--strict applies only to --format openai and --format openai-responses")
    # The file (as given, and where it is), found from the directory the command started in
    # before a target can chdir() as it is imported; messages name it as given.
    given: str | None = args.check if args.check is not None else args.output
    file = None if given is None else (given, os.path.abspath(given))
    with _stdout_to_stderr():  # what the targets print is not the schema
        text = render_schema(args.targets, args.format, strict=args.strict)
    data = text.encode("utf-8")  # render_schema made sure it can be
    if file is not None and args.check is not None:
        return _check(*file, data, _regenerate_command(args, prog))
    if file is not None:
        try:
            _write_whole(file[1], data)
        except OSError as exc:
            raise _UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
        return 0
    _write_stdout(data)
    return 0


def _write_whole(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: to a new file beside it, renamed over it.

    A concurrent reader (a ``--check``) sees the old file or the new one, never a
    part, and a failed write (a full disk) leaves the old file as it was. The new
    file gets the old one's permissions (a new one, those ``open()`` would give),
    and a symlink's target is written, not the link. What is no regular file
    (``/dev/stdout``, a FIFO, a device) cannot be replaced: it is written in place.
    """
    target = os.path.realpath(path)
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, "wb") as file:
            _write_all(file, data)  # a FIFO's write may take part of it, as stdout's
        return
    if mode is not None and not os.access(target, os.W_OK):  # open() would refuse it too
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    directory, name = os.path.split(target)
    temporary = os.path.join(directory, f".{name}.{os.urandom(4).hex()}.tmp")
    # Mode 0o666 less the umask, as open() creates a file (mkstemp's would be 0o600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    descriptor = os.open(temporary, flags, 0o666)
    try:
        with open(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())  # on disk before it has the name: a crash leaves one file whole
        if mode is not None:
            os.chmod(temporary, stat.S_IMODE(mode))
        os.replace(temporary, target)
    except BaseException:  # an interrupt too: no temporary file is left behind
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _write_stdout(data: bytes) -> None:
    """Write UTF-8 ``data`` to stdout as bytes: what -o writes, whatever its encoding and newlines.

    A write error is a usage error as with -o, except ``BrokenPipeError``: the
    reader left early, which ``main`` ends quietly. So is a write that takes
    nothing more: a pipe whose reader left can take part of the data, and the
    buffer then returns the count instead of raising.
    """
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise _UsageError("cannot write stdout: it is closed")
    stdout = getattr(sys.stdout, "buffer", None)
    try:
        if stdout is None:  # a text-only stream (an embedding program's): it takes text
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
        else:
            sys.stdout.flush()
            _write_all(stdout, data)
            stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk, an I/O error
        # What the buffer still holds would fail again in the flush at exit, as a traceback.
        _discard_stdout()
        raise _UsageError(f"cannot write stdout: {exc.strerror or exc}") from exc


def _write_all(stream: BinaryIO, data: bytes) -> None:
    """Write all of ``data``, however little each write takes (it returns the count taken).

    A write that takes nothing, and raises nothing, can go no further: it is
    reported as the ``BrokenPipeError`` of a reader that left.
    """
    rest = memoryview(data)
    while rest:
        taken = stream.write(rest)
        if not taken:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
        rest = rest[taken:]


def _discard_stdout() -> None:
    """Point stdout's file descriptor at the null device: what is left to print goes nowhere."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (pytest's capture, a StringIO)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


@contextlib.contextmanager
def _stdout_to_stderr() -> Generator[None, None, None]:
    """Send what the user's code prints to stderr: through ``sys.stdout``, and past it.

    Native code (a C extension's banner), ``os.write(1, ...)`` and ``sys.__stdout__``
    write to file descriptor 1 itself, so that descriptor points at stderr's for
    the while, and is restored after, also when the code raised.
    """
    _flush(sys.__stdout__)  # what was printed before is stdout's
    saved = _redirect_descriptor(1, 2)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            _flush(sys.__stdout__)  # what the code left in that buffer is stderr's too
            os.dup2(saved, 1)
            os.close(saved)


def _stdout_to_stderr_for_good() -> None:
    """Send what is printed from now on (at exit) to stderr: ``sys.stdout`` and descriptor 1.

    What stdout's buffer still holds is written first, where it was going; if
    that fails (a reader that left, a full disk), it goes nowhere instead.
    """
    try:
        for stream in (sys.stdout, sys.__stdout__):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # ValueError: closed
        _discard_stdout()  # the flush at exit writes it there, without a traceback
        return
    saved = _redirect_descriptor(1, 2)
    if saved is not None:
        os.close(saved)  # never restored
    sys.stdout = sys.stderr


def _redirect_descriptor(fd: int, to: int) -> int | None:
    """Make ``fd`` a copy of ``to``; return a duplicate of the old ``fd`` to restore it from.

    ``None`` when ``fd`` is not open (``>&-``): there is no output to protect. When
    ``to`` is not open (``2>&-``), ``fd`` points at the null device instead: what
    is printed is better lost than in the output.
    """
    if not _is_open(fd):
        return None
    # Opened before the duplicate, which would otherwise take a closed ``to``'s number.
    source = to if _is_open(to) else os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(fd)  # not inheritable: a child process the code starts does not get it
    os.dup2(source, fd)
    if source != to:
        os.close(source)
    return saved


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _flush(stream: TextIO | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):  # closed or failing: the code's to report
            stream.flush()


def _serve_limits(args: argparse.Namespace) -> Limits | None:
    """The ``Limits`` the served calls are held to, if any option asks for them."""
    given = {
        name: value
        for name in ("tool_timeout", "max_input_bytes", "max_result_bytes")
        if (value := getattr(args, name)) is not None
    }
    if not given:
        return None
    try:
        return Limits(**given)
    except (TypeError, ValueError) as exc:
        option = "--" + str(exc).split()[0].removeprefix("Limits.").replace("_", "-")
        raise _UsageError(f"{option}: {exc}") from None


def _mcp_serve(args: argparse.Namespace, prog: str) -> int:
    http_options = {
        "--host": args.host,
        "--port": args.port,
        "--path": args.path,
        "--allow-host": args.allow_host,
        "--allow-origin": args.allow_origin,
        "--auth-token-env": args.auth_token_env,
        "--auth-token": args.auth_token,
        "--session-idle-timeout": args.session_idle_timeout,
        "--max-sessions": args.max_sessions,
    }
    if args.transport == "stdio":
        given = [option for option, value in http_options.items() if value is not None]
        if given:
            options = " and ".join([", ".join(given[:-1]), given[-1]] if given[:-1] else given)
            verb = "needs" if len(given) == 1 else "need"
            raise _UsageError(f"{options} {verb} --transport http")
    if args.path is not None and not args.path.startswith("/"):
        raise _UsageError(f"--path must start with '/', not {args.path!r}")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise _UsageError(f"--port must be between 0 and 65535, not {args.port}")
    timeout: float | None = args.session_idle_timeout
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise _UsageError(f"--session-idle-timeout must be a positive number, not {timeout}")
    if args.max_sessions is not None and args.max_sessions < 1:
        raise _UsageError(f"--max-sessions must be at least 1, not {args.max_sessions}")
    auth_token = _auth_token(args)
    try:
        from .mcp import serve_async
    except ImportError as exc:
        raise _UsageError(str(exc)) from None
    from mcp.server.streamable_http_manager import (
        DEFAULT_MAX_SESSIONS,
        DEFAULT_SESSION_IDLE_TIMEOUT,
    )

    limits = _serve_limits(args)  # before the factory runs: a bad option is said first
    # Over stdio, stdout is the protocol: output of the user's code must not reach it.
    redirect = _stdout_to_stderr() if args.transport == "stdio" else contextlib.nullcontext()
    with redirect:
        tools = _load_factory(args.factory)

    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("llm_worker").setLevel(logging.INFO)
    transport: Literal["stdio", "http"] = args.transport
    host: str = args.host or "127.0.0.1"
    port: int = 8000 if args.port is None else args.port
    path: str = args.path or "/mcp"
    idle_timeout = DEFAULT_SESSION_IDLE_TIMEOUT if timeout is None else timeout
    max_sessions: int = DEFAULT_MAX_SESSIONS if args.max_sessions is None else args.max_sessions

    async def serve() -> None:
        await serve_async(
            tools,
            limits=limits,
            transport=transport,
            host=host,
            port=port,
            path=path,
            allowed_hosts=args.allow_host or (),
            allowed_origins=args.allow_origin or (),
            auth_token=auth_token,
            session_idle_timeout=idle_timeout,
            max_sessions=max_sessions,
        )

    try:
        run_until_ctrl_c(serve)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the HTTP port cannot be bound
        print(f"{prog} mcp serve: error: {exc}", file=sys.stderr)
        return 1
    if transport == "stdio":
        _exit_now_if_threads_run(0, logging.getLogger("llm_worker.mcp"), _CLIENT_GONE)
    return 0


def _auth_token(args: argparse.Namespace) -> str | None:
    if args.auth_token is not None:
        option, given = "--auth-token", str(args.auth_token)
    elif args.auth_token_env is not None:
        option, given = "--auth-token-env", os.environ.get(args.auth_token_env, "")
        if not given:
            raise _UsageError(
                f"--auth-token-env: the environment variable {args.auth_token_env} is not set"
            )
    else:
        return None
    # A secret file written with echo ends in a newline, which no client sends.
    token = given.strip()
    if not token:
        raise _UsageError(f"{option}: the token is empty (only whitespace)")
    if any(char.isspace() for char in token):
        raise _UsageError(f"{option}: the token contains whitespace, which a bearer token cannot")
    return token


def _exit_now_if_threads_run(status: int, logger: logging.Logger, why: str) -> None:
    """End the process with ``status`` at once if threads other than daemons still run:
    the command is done, and nobody waits for them.

    Python waits for such threads at exit, before ``atexit`` handlers run: a
    plain-``def`` tool abandoned when a stdio client went away, runs on in a
    worker thread; a thread a target started as it was imported (a pool, a metrics
    exporter) may never end. Threads that end within moments (idle worker
    threads) are waited for, and the process exits as usual. When it does not
    wait, ``why`` (a format taking their count) is logged at INFO on ``logger``.
    """
    deadline = time.monotonic() + _THREAD_GRACE_SECONDS
    running: list[threading.Thread] = []
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            running.append(thread)
    if not running:
        return
    logger.info(why, len(running))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        _flush(stream)
    os._exit(status)


_THREAD_GRACE_SECONDS = 1.0
_CLIENT_GONE = "the client has gone; exiting without waiting for %d running tool thread(s)"
_DONE = "done; exiting without waiting for %d thread(s) the imported code left running"


def _load_factory(target: str) -> ToolServer | ToolServerHandle:
    """Import ``package.module:function``, call it, and check it made a ToolServer."""
    value = _resolve(target, _FACTORY)
    if not callable(value):
        raise _UsageError(
            f"{target!r} is not callable ({type(value).__name__}); name a function "
            f"that returns a ToolServer"
        )
    try:
        made: object = value()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the factory's own code raised: say what, as _import does
        raise _UsageError(f"calling {target!r} failed: {_describe(exc)}") from None
    if inspect.iscoroutine(made):
        made.close()
        raise _UsageError(
            f"{target!r} is an async function; the factory must be a plain function "
            f"that returns a ToolServer"
        )
    if not isinstance(made, (ToolServer, ToolServerHandle)):
        raise _UsageError(
            f"{target!r} returned {type(made).__name__}, not a ToolServer or ToolServerHandle"
        )
    return made


def render_schema(targets: Sequence[str], format: str, *, strict: bool = False) -> str:
    """The text ``llm-worker schema`` writes for ``targets``: the one renderer of -o and --check.

    Raises ``_UsageError`` for a bad target, a target without tools, a tool name
    defined twice, a schema the format cannot express, or text UTF-8 cannot encode.
    """
    # The metas themselves: the mcp format carries their title, annotations and outputSchema.
    metas = sorted(_collect(targets), key=lambda m: m.name)
    try:
        tools = export_tools(metas, cast("FormatName", format), strict=strict)
    except ValueError as exc:
        raise _UsageError(_one_line(str(exc))) from exc
    text = json.dumps(tools, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")  # the output is UTF-8; only a failure pays for finding where
    except UnicodeEncodeError:
        raise _UsageError(_unencodable(metas, tools)) from None
    return text


def _unencodable(metas: Sequence[ToolMeta], tools: Sequence[object]) -> str:
    """Say which tool holds the text UTF-8 cannot encode (a lone surrogate), and where."""
    for meta, exported in zip(metas, tools, strict=True):  # export_tools gives one per meta
        found = _find_surrogate(exported, ())
        if found is not None:
            path, char = found
            # U+XXXX, not the character: stderr may not be able to print it either.
            return (
                f"tool {meta.name!r}: the text at {'/'.join(path)} holds U+{ord(char):04X}, "
                f"a lone surrogate, which UTF-8 cannot encode (such as bytes decoded with "
                f"errors='surrogateescape' leave)"
            )
    return "the output holds a lone surrogate, which UTF-8 cannot encode"  # not reached


def _find_surrogate(value: object, path: tuple[str, ...]) -> tuple[tuple[str, ...], str] | None:
    """The path to the first string in JSON-like ``value`` holding a surrogate, and that one."""
    if isinstance(value, str):
        char = next((c for c in value if "\ud800" <= c <= "\udfff"), None)
        return None if char is None else (path, char)
    items: list[tuple[object, object]]
    if isinstance(value, dict):
        items = list(cast("dict[object, object]", value).items())
    elif isinstance(value, (list, tuple)):
        items = list(enumerate(cast("Sequence[object]", value)))
    else:
        return None
    for key, item in items:
        # A bad key is reported at its mapping: the path never holds the character itself.
        found = _find_surrogate(key, path) or _find_surrogate(item, (*path, str(key)))
        if found is not None:
            return found
    return None


def _collect(targets: Sequence[str]) -> list[ToolMeta]:
    """The metas of every class of every target; one per tool name."""
    class_metas: dict[type, list[ToolMeta]] = {}  # a class two targets name is read once
    for target in targets:
        classes = _load(target)
        for cls in classes:
            if cls not in class_metas:
                class_metas[cls] = _tool_metas(cls)
        # A --check of a target without tools would pass on "[]": most likely the wrong class.
        if not any(class_metas[cls] for cls in classes):
            raise _UsageError(_no_tools(target, classes))
    metas: dict[str, tuple[ToolMeta, type]] = {}
    for cls, own in class_metas.items():
        for meta in own:
            seen = metas.get(meta.name)
            if seen is None:
                metas[meta.name] = (meta, cls)
            elif seen[0] != meta:  # the same tool, inherited by two classes, is one tool
                raise _UsageError(
                    f"two tools are named {meta.name!r}: one in {_qualname(seen[1])}, "
                    f"one in {_qualname(cls)} (tool names must be unique)"
                )
    return [meta for meta, _ in metas.values()]


def _tool_metas(cls: type) -> list[ToolMeta]:
    try:
        return tool_metas(cls)
    except TypeError as exc:  # a schema pydantic cannot generate
        raise _UsageError(_one_line(str(exc))) from exc


def _no_tools(target: str, classes: Sequence[type]) -> str:
    if ":" in target:
        return f"{target!r} has no tools (a @tool_registry class without @tool methods)"
    names = ", ".join(cls.__qualname__ for cls in classes)
    return f"module {target!r} has no tools (no @tool methods in {names})"


def _load(target: str) -> list[type]:
    """The registry classes ``target`` names: one class, or those a module defines."""
    value = _resolve(target, _SCHEMA_TARGET)
    if isinstance(value, ModuleType):
        namespace: dict[str, object] = vars(value)
        registries = {
            name: cast(type, member)
            for name, member in namespace.items()
            if is_tool_registry(member)
        }
        found = [cls for cls in registries.values() if cls.__module__ == value.__name__]
        if not found:  # the imported ones are not the module's: a package's re-exports, say
            raise _UsageError(_defines_no_registry(value.__name__, registries))
        return found
    if not isinstance(value, type):
        raise _UsageError(f"{target!r} is not a class (it is a {type(value).__name__})")
    if not is_tool_registry(value):
        raise _UsageError(f"{target!r} is not a @tool_registry class")
    return [value]


def _defines_no_registry(module: str, imported: dict[str, type]) -> str:
    """Say that ``module`` defines no registry class, and the targets for those it imports."""
    message = f"module {module!r} defines no @tool_registry class"
    if not imported:
        return message
    classes = ", ".join(_qualname(cls) for cls in imported.values())
    # Each class by the name it is imported as, and the modules that define them (a module
    # target takes the classes at its top level only).
    defining = [cls.__module__ for cls in imported.values() if "." not in cls.__qualname__]
    targets = [repr(f"{module}:{name}") for name in imported]
    targets += [repr(name) for name in dict.fromkeys(defining)]
    choices = f"{', '.join(targets[:-1])} or {targets[-1]}" if len(targets) > 1 else targets[0]
    return (
        f"{message} (a module target takes only those it defines; it imports {classes}): "
        f"give {choices}"
    )


@dataclass(frozen=True)
class _TargetKind:
    """How a command names what it loads, for ``_resolve`` and its messages."""

    noun: str  # "invalid {noun} ..."
    form: str  # "(expected {form})"
    member: str  # "module 'm' has no {member} 'x'"
    module_alone: bool  # whether ``package.module`` without ``:attr`` is a target


_SCHEMA_TARGET = _TargetKind("target", "package.module or package.module:Class", "class", True)
_FACTORY = _TargetKind("factory", "package.module:function", "attribute", False)


def _resolve(target: str, kind: _TargetKind) -> object:
    """Import the module of ``package.module[:attr.path]`` and return what the target names.

    The one place the CLI reads a target: the module itself when there is no
    ``:attr``, else the attribute, looked up one dotted part at a time.
    """
    module_name, colon, attr_path = target.partition(":")
    if _is_file_path(module_name):  # refused before importing: its code is not to run
        raise _UsageError(_file_path_given(target, module_name, colon + attr_path, kind))
    valid = _is_dotted_name(module_name) and (
        _is_dotted_name(attr_path) if colon else kind.module_alone
    )
    if not valid:
        raise _UsageError(f"invalid {kind.noun} {target!r} (expected {kind.form})")
    value: object = _import(module_name)
    if not colon:
        return value
    for part in attr_path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise _UsageError(
                f"module {module_name!r} has no {kind.member} {attr_path!r}"
            ) from None
    return value


def _is_file_path(text: str) -> bool:
    """Whether a target's module part is a file's path (``tools.py``), not a module name."""
    return text.endswith(".py") or (not _is_dotted_name(text) and os.path.isfile(text))


def _file_path_given(target: str, path: str, rest: str, kind: _TargetKind) -> str:
    """Say that ``target`` names a file, and the module name it may mean (``pkg.mod``)."""
    if os.path.isabs(path):
        path = _below_current_directory(path)
    stem = path.removesuffix(".py")
    module = ".".join(part for part in re.split(r"[\\/]", stem) if part not in ("", "."))
    if not _is_dotted_name(module):
        return f"{target!r} is a file path; a {kind.noun} is a module name ({kind.form})"
    return f"{target!r} is a file path; a {kind.noun} is a module name: try {module + rest!r}"


def _below_current_directory(path: str) -> str:
    """``path`` from the current directory, where imports start; else the file's name alone."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # Windows: another drive
        return os.path.basename(path)
    return os.path.basename(path) if relative.split(os.sep)[0] == os.pardir else relative


def _import(module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == module_name or module_name.startswith(missing + "."):
            raise _UsageError(f"no module named {module_name!r}") from None
        raise _UsageError(f"importing {module_name!r} failed: {_describe(exc)}") from None
    except KeyboardInterrupt:  # the user's, not the target's
        raise
    # The target's own code raised: say what, in one line. Any BaseException: sys.exit(),
    # and what uncaught would end the process with a traceback and the status 1 of an
    # out-of-date file (an asyncio.CancelledError, GeneratorExit, a class of its own).
    except BaseException as exc:
        raise _UsageError(f"importing {module_name!r} failed: {_describe(exc)}") from None


def _check(path: str, resolved: str, expected: bytes, command: str) -> int:
    """Compare the file ``path`` (as given; ``resolved``, where it is) with ``expected``."""
    try:
        with open(resolved, "rb") as file:
            actual = file.read()
    except FileNotFoundError:
        print(f"{path} does not exist; create it with:\n  {command}", file=sys.stderr)
        return 1
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if actual == expected:
        return 0
    # Differences a diff line does not show are taken out first, and named instead.
    # The output starts with "[": a byte-order mark is an editor's ("UTF-8 with BOM").
    bom = actual.startswith(codecs.BOM_UTF8)
    if bom:
        actual = actual.removeprefix(codecs.BOM_UTF8)
    # The output never holds a \r (JSON escapes it): a \r\n is Git's core.autocrlf, mostly.
    crlf = b"\r\n" in actual
    if crlf:
        actual = actual.replace(b"\r\n", b"\n")  # a diff of every line would show nothing
    advice = f"\n{_eol_advice(path)}" if crlf else ""
    if (bom or crlf) and actual == expected:  # still out of date: the bytes differ
        only, _ = _UNSEEN_DIFFERENCES[bom, crlf]
        print(
            f"{path} differs only in {only}; regenerate it with:\n  {command}{advice}",
            file=sys.stderr,
        )
        return 1
    _write_stdout(_diff(path, actual, expected))
    print(f"{path} is out of date; regenerate it with:\n  {command}", file=sys.stderr)
    if bom or crlf:
        _, left_out = _UNSEEN_DIFFERENCES[bom, crlf]
        print(f"({left_out} left out of the diff){advice}", file=sys.stderr)
    return 1


# (byte-order mark, \r\n line endings) -> how a check says the file differs only in
# them, and how it says the diff leaves them out.
_UNSEEN_DIFFERENCES: dict[tuple[bool, bool], tuple[str, str]] = {
    (True, False): (
        "its byte-order mark: it starts with U+FEFF (a UTF-8 BOM), the output does not",
        "its byte-order mark is",
    ),
    (False, True): (
        "its line endings: \\r\\n where the output has \\n",
        "its \\r\\n line endings are",
    ),
    (True, True): (
        "its byte-order mark and its line endings: it starts with U+FEFF (a UTF-8 BOM), "
        "the output does not, and has \\r\\n where the output has \\n",
        "its byte-order mark and its \\r\\n line endings are",
    ),
}


def _diff(path: str, actual: bytes, expected: bytes) -> bytes:
    """A unified diff from ``actual`` to ``expected``, as UTF-8 (stdout takes bytes)."""
    import difflib  # only a failed check pays for it

    diff = difflib.unified_diff(
        _lines(actual.decode("utf-8", errors="replace")),
        _lines(expected.decode("utf-8")),
        fromfile=path,
        tofile=f"{path} (regenerated)",
    )
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff
    )
    # errors="replace": a path given as undecodable bytes (surrogateescape) is no reason to fail.
    return text.encode("utf-8", errors="replace")


def _lines(text: str) -> list[str]:
    """``text``'s lines, ends kept: split at "\n" only (``splitlines`` also splits at the
    U+2028 or U+0085 a description may hold, which JSON leaves in its strings)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _eol_advice(path: str) -> str:
    pattern = os.path.normpath(path)
    if os.path.isabs(pattern) or pattern.startswith(os.pardir):  # not below the current directory
        pattern = os.path.basename(pattern)  # a pattern without "/" matches in every directory
    pattern = pattern.replace(os.sep, "/")  # .gitattributes patterns use "/"
    return (
        "To keep Git from converting it again (core.autocrlf), give it a .gitattributes "
        f"line such as: {pattern} text eol=lf"
    )


def _regenerate_command(args: argparse.Namespace, prog: str, *, windows: bool | None = None) -> str:
    """The command that writes the ``--check`` file, quoted for this system's shell.

    ``windows`` (default: whether this is Windows) picks cmd.exe's quoting over
    the POSIX shell's, in which ``'C:\\x y.json'`` is no path to cmd.exe.
    """
    words = ["schema", *args.targets]
    if args.format != "neutral":
        words += ["--format", args.format]
    if args.strict:
        words.append("--strict")
    path: str = args.check
    # argparse reads "-o -x.json" as an -o without its value: "--output=-x.json" it takes.
    words += [f"--output={path}"] if path.startswith("-") else ["-o", path]
    on_windows = os.name == "nt" if windows is None else windows
    if on_windows:
        import subprocess  # only Windows pays for it

        return f"{prog} {subprocess.list2cmdline(words)}"
    return " ".join(_posix_quote(word) for word in [*shlex.split(prog), *words])


def _posix_quote(word: str) -> str:
    """``word`` quoted for a POSIX shell; one holding bytes that are no UTF-8 as ``$'...'``.

    A file name given as such bytes reaches ``sys.argv`` as lone surrogates
    (``surrogateescape``), which no printable text names; ``$'caf\\xe9.json'``
    gives the shell the bytes back (bash, zsh, ksh and POSIX.1-2024 ``sh`` read it).
    """
    if not any("\udc80" <= char <= "\udcff" for char in word):
        return shlex.quote(word)
    try:
        data = os.fsencode(word)
    except UnicodeEncodeError:  # other surrogates: no bytes, so no file name either
        return shlex.quote(word)
    escaped = "".join(
        chr(byte) if 0x20 <= byte < 0x7F and byte not in b"'\\" else f"\\x{byte:02x}"
        for byte in data
    )
    return f"$'{escaped}'"


def _is_dotted_name(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_one_line(str(exc))}" if str(exc) else type(exc).__name__


def _one_line(text: str) -> str:
    """A multi-line message (a heading, then indented items) as one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    result = lines[0] if lines else ""
    for line in lines[1:]:
        result += (" " if result.endswith(":") else "; ") + line
    return result
