"""Where ``privatize`` writes: a file replaced only when the run succeeds, or a descriptor,
device or FIFO written through; and the checks that keep outputs off the inputs and the
report off the private text."""

from __future__ import annotations

import argparse
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from .._cache import owned
from ..errors import os_reason
from .process import CLIError


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # links too
    except OSError:  # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


#: Names of this process's own descriptors: /dev/stdout, /dev/fd/N, /proc/self/fd/N.
_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_NAME = re.compile(r"/(?:dev|proc/self|proc/thread-self|proc/(\d+))/fd/(\d+)")
_STREAM_NAMES = {0: "stdin", 1: "stdout", 2: "stderr"}


def _descriptor(target: str) -> int | None:
    """The descriptor ``target`` names (``/dev/stdout``, ``/dev/fd/3``,
    ``/proc/self/fd/3``), else None. Such a name is a link to what the descriptor holds: a
    pipe has no path to replace, and replacing the file behind it would drop what an ``>>``
    redirect held (and what was written to the descriptor): they are written through."""
    path = os.path.abspath(target)
    if path in _STANDARD:
        return _STANDARD[path]
    match = _FD_NAME.fullmatch(path)
    if match is None or (match[1] is not None and int(match[1]) != os.getpid()):
        return None
    return int(match[2])


def _write_error(target: str, error: OSError) -> OSError | CLIError:
    """A failed write as an error naming its target (``writing /dev/full: No space left on
    device``). A reader that left (BrokenPipeError)
    stays itself: it ends the run with exit code 141."""
    if isinstance(error, BrokenPipeError):
        return error
    return CLIError(f"writing {target}: {os_reason(error)}")


def _same_regular_file(fd: int, name: str | int) -> bool:
    """Whether descriptor ``fd`` holds the regular file ``name`` (a path, or a descriptor:
    stdin's 0); pipes and terminals may be shared: a regular file would be replaced, or
    read while it grows."""
    try:
        held, named = os.fstat(fd), (os.fstat(name) if isinstance(name, int) else os.stat(name))
    except OSError:
        return False
    return stat.S_ISREG(held.st_mode) and (held.st_dev, held.st_ino) == (
        named.st_dev,
        named.st_ino,
    )


def _overlaps(target: str, name: str) -> bool:
    """Whether output ``target`` (a file name or a descriptor's) is input file ``name``."""
    fd = _descriptor(target)
    return _same_file(target, name) if fd is None else _same_regular_file(fd, name)


def _check_targets(args: argparse.Namespace) -> None:
    """Refuse to write over an input: it would be replaced by its own privatization (the
    output would even be emptied before the input was read). Refuse a report written where the
    private text goes: it would be mixed into it, or lost when the output replaces it."""
    inputs = [name for name in args.files if name != "-"]
    for option, target in (("--output", args.output), ("--report", args.report)):
        if target not in (None, "-") and any(_overlaps(target, name) for name in inputs):
            raise CLIError(f"{option} {target} is also an input file: write to another file")
        if (
            target not in (None, "-")
            and "-" in args.files
            and _descriptor(target) is None
            and _same_regular_file(0, target)
        ):  # `dxp privatize - -o notes.txt < notes.txt`: the input would be replaced
            raise CLIError(f"{option} {target} is also the input (stdin): write to another file")
    _check_descriptors(args)
    if args.report is None:
        return

    def destination(target: str, standard: int) -> int | str:
        """The descriptor a target writes to ('-': stdout or stderr), else its file name."""
        if target == "-":
            return standard
        fd = _descriptor(target)
        return target if fd is None else fd

    output, report = destination(args.output, 1), destination(args.report, 2)
    if isinstance(output, int) and isinstance(report, int):
        same = output == report
    elif isinstance(output, str) and isinstance(report, str):
        special = Path(output).exists() and not Path(output).is_file()
        same = _same_file(output, report) and not special  # /dev/null twice is fine
    elif isinstance(output, int):  # a descriptor and a file name: the same regular file?
        same = _same_regular_file(output, str(report))
    else:
        same = _same_regular_file(int(report), output)
    if same:
        where = "stdout" if args.output == "-" else args.output
        raise CLIError(
            f"--report {args.report} and the output ({where}) are the same file or "
            "descriptor: write them apart"
        )


def _check_descriptors(args: argparse.Namespace) -> None:
    """Refuse a run whose output or report goes to a descriptor (stdout, stderr for
    ``--report -``, ``/dev/fd/N``) holding a regular file that is also an input: ``dxp
    privatize in.txt >> in.txt`` would read its own output back and never end (a file grew
    to 293 MB), and ``> in.txt`` empties the input before dxp starts (exit 0, nothing
    written). As cat's "input file is output file"; pipes and terminals may be
    shared."""
    for target, standard in ((args.output, 1), (args.report, 2)):
        if target is None:
            continue
        fd = standard if target == "-" else _descriptor(target)
        if fd is None:
            continue
        where = _STREAM_NAMES[standard] if target == "-" else target
        for name in args.files:
            if _same_regular_file(fd, 0 if name == "-" else name):
                raise CLIError(
                    f"{'stdin' if name == '-' else name}: input file is output file "
                    f"({where}): write to another file"
                )


def _open_descriptor(target: str, fd: int) -> IO[bytes]:
    """A duplicate of descriptor ``fd``: it keeps the shell's O_APPEND and offset, and
    nothing is truncated or replaced."""
    name = _STREAM_NAMES.get(fd)
    if name is not None and getattr(sys, name) is None:  # closed when dxp started
        raise CLIError(f"cannot write {target}: {name} is closed")
    try:
        copy = os.dup(fd)
    except OSError as error:
        raise CLIError(f"cannot write {target}: {os_reason(error)}") from None
    if not _open_for_writing(copy):
        os.close(copy)
        raise CLIError(f"cannot write {target}: not open for writing")
    return os.fdopen(copy, "wb")


def _open_for_writing(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: a write will tell
        return True
    return (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)


@contextmanager
def _replacing(target: str) -> Iterator[tuple[IO[bytes], bool]]:
    """A new file beside ``target`` that replaces it only when the block succeeds: a failed
    run leaves no partial output and an existing ``target`` untouched. Descriptors
    (``/dev/stdout``, ``/dev/fd/N``), devices, FIFOs and sockets are written through instead.
    Yields the stream and whether it replaces ``target`` (False: written through)."""
    fd = _descriptor(target)
    if fd is not None:
        with _open_descriptor(target, fd) as direct:
            yield direct, False
        return
    try:
        info: os.stat_result | None = os.stat(target)  # follows links, as open() would
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise CLIError(f"cannot write {target}: {os_reason(error)}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):  # os.replace would fail at the end
        raise CLIError(f"cannot write {target}: is a directory")
    if info is not None and not stat.S_ISREG(info.st_mode):  # device, FIFO: write through
        try:
            direct = open(target, "wb")  # noqa: SIM115
        except OSError as error:
            raise CLIError(f"cannot write {target}: {os_reason(error)}") from None
        with direct:
            yield direct, False
        return
    _check_link(target)
    path = Path(target).resolve()  # a symlink: replace the file it points to
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:  # readable by this user only while it fills (a killed run may leave it behind)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _EXTRA_FLAGS, 0o600)
    except OSError as error:
        # A writable file in a folder that is not (a single-file mount, a read-only root)
        # would say only "Permission denied".
        beside = (
            f" (it is replaced at the end through a new file beside it, in {path.parent}, "
            "which cannot be created there: write to a writable folder, or redirect the "
            "output: > FILE)"
            if info is not None
            else ""
        )
        raise CLIError(f"cannot write {target}: {os_reason(error)}{beside}") from None
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream, True
        try:  # named: "Operation not permitted" alone names no file
            os.chmod(temporary, _final_mode(info))
            _replace(temporary, path)
        except OSError as error:
            raise _write_error(target, error) from None
    except BaseException:
        with suppress(OSError):
            temporary.unlink()
        raise


#: Attempts at renaming over a target: on Windows another process holding the file open (an
#: editor, ``Get-Content -Wait``, a scanner glancing at a new file) makes ``os.replace``
#: fail with PermissionError for a moment, and a streamed run's report is renamed before
#: every batch (reasoned from the platform's rules, not run there).
_REPLACE_ATTEMPTS = 5 if os.name == "nt" else 1


def _replace(temporary: Path, path: Path) -> None:
    """``os.replace``, retried a few times over about a second on PermissionError where
    :data:`_REPLACE_ATTEMPTS` says so."""
    for attempt in range(_REPLACE_ATTEMPTS):
        try:
            os.replace(temporary, path)
            return
        except PermissionError:
            if attempt == _REPLACE_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * 2**attempt)  # 0.05, 0.1, 0.2, 0.4 s


#: Flags of the temporary output file beyond write/create/exclusive: not inherited by child
#: processes, and on Windows binary (else each "\n" written became "\r\n", as tempfile knows).
_EXTRA_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _final_mode(info: os.stat_result | None) -> int:
    """The mode a replaced output gets: the existing target's when this user owns it,
    else what a new file gets (``0o666 & ~umask``): a target planted by another user
    must not lend the private output its mode (0o666 made it world-writable)."""
    if info is not None and owned(info):
        return stat.S_IMODE(info.st_mode)
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask (read from /proc where it can be: setting it to read it is
    process-wide, and other threads may create files meanwhile)."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_link(target: str) -> None:
    """Refuse a symbolic link at ``target`` owned by another user (as the kernel's
    ``protected_symlinks`` does in shared folders): following it would create the output
    wherever that user points it."""
    try:
        link = os.lstat(target)
    except OSError:
        return
    if stat.S_ISLNK(link.st_mode) and not owned(link):
        raise CLIError(
            f"cannot write {target}: it is a symbolic link owned by another user; "
            "name the file it points to"
        )


def _written_through(target: str) -> bool:
    """Whether :func:`_replacing` writes ``target`` through (a descriptor, an existing
    device, FIFO or socket) rather than replacing a file (a missing or unreadable target:
    it would try to replace it)."""
    if _descriptor(target) is not None:
        return True
    try:
        info = os.stat(target)
    except OSError:
        return False
    return not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode))


class _Checked(Exception):
    """Leaves a :func:`_replacing` block without replacing its target."""


def _check_replaceable(target: str) -> None:
    """Refuse, as :func:`_replacing` would, a file ``target`` that cannot be replaced:
    its temporary file is created and removed, and ``target`` left as it is."""
    with suppress(_Checked), _replacing(target):
        raise _Checked
