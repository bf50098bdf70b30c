"""Durable files: reading a tokenizer file safely (regular files, a size cap, gzip),
writing atomically, publishing a set of files together (FileSet)."""

from __future__ import annotations as _annotations

import os as _os
import stat as _stat

# Loaders read at most this many bytes: far above any real vocabulary (o200k's
# .tiktoken file is 3.6 MB, its tokenizer.json about 15 MB), far below what
# would exhaust memory when a path names something endless.
_MAX_FILE_BYTES = 1 << 28

_FILE_KINDS = ((_stat.S_ISDIR, "a directory"), (_stat.S_ISFIFO, "a FIFO (named pipe)"),
               (_stat.S_ISCHR, "a character device"), (_stat.S_ISBLK, "a block device"),
               (_stat.S_ISSOCK, "a socket"))


def _check_regular(path, mode, size):
    if not _stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{path}: {kind}; tokenizer files must be regular files")
    if size > _MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {_MAX_FILE_BYTES} bytes a tokenizer "
                         f"file may have")


def _read_file(path):
    """The bytes of a regular file, inflated if it is gzipped: what every
    loader reads (the native format, tokenizer.json, GPT-2's files, .tiktoken
    files and their sidecars, tiktoken's cache).

    Devices, FIFOs, sockets and directories are refused before anything is
    read (a FIFO is opened without blocking, so a missing writer never hangs
    the caller), and so is a file larger than _MAX_FILE_BYTES, before or
    after inflating (which stops there: a gzip bomb costs no more)."""
    path = _os.fspath(path)
    _check_regular(path, *_mode_size(_os.stat(path)))
    flags = (_os.O_RDONLY | getattr(_os, "O_NONBLOCK", 0) | getattr(_os, "O_NOCTTY", 0)
             | getattr(_os, "O_BINARY", 0) | getattr(_os, "O_CLOEXEC", 0))
    fd = _os.open(path, flags)
    with _os.fdopen(fd, "rb") as f:
        _check_regular(path, *_mode_size(_os.fstat(fd)))  # the same file as stat() saw
        data = f.read(_MAX_FILE_BYTES + 1)
    if len(data) > _MAX_FILE_BYTES:
        _check_regular(path, _stat.S_IFREG, len(data))
    return _inflate(data, path) if data[:2] == b"\x1f\x8b" else data


_INFLATE_STEP = 1 << 20


def _inflate(data, path):
    """gzip data (any number of members, zero bytes between and after them)
    inflated a step at a time, no more than _MAX_FILE_BYTES of it."""
    steps = (data[k:k + _INFLATE_STEP] for k in range(0, len(data), _INFLATE_STEP))
    return b"".join(_inflate_steps(steps, path, _MAX_FILE_BYTES))


def _inflate_steps(blocks, path, limit=None):
    """The inflated pieces (at most _INFLATE_STEP bytes each) of gzip data
    given as an iterable of blocks: any number of members, zero bytes between
    and after them; more than `limit` bytes inflated (None: no limit) or a
    broken stream is a ValueError naming `path`.  Memory: a block and a step."""
    import zlib

    blocks = iter(blocks)
    size = 0
    pending, d = b"", None  # input not yet inflated; the member being inflated
    try:
        while True:
            if d is None:  # between members
                pending = pending.lstrip(b"\0")
                if not pending:
                    pending = next(blocks, None)
                    if pending is None:
                        return
                    continue
                d = zlib.decompressobj(wbits=31)
            piece = d.decompress(pending, _INFLATE_STEP)
            pending = d.unconsumed_tail
            if piece:
                size += len(piece)
                if limit is not None and size > limit:
                    raise ValueError(f"{path}: more than the {limit} bytes a tokenizer file may "
                                     f"have, once inflated")
                yield piece
            if d.eof:  # what follows the member (unconsumed_tail holds it too)
                pending, d = d.unused_data, None
            elif not piece and not pending:
                pending = next(blocks, None)
                if pending is None:
                    raise ValueError(f"{path}: a broken gzip file (it ends in the middle of "
                                     f"the data)")
    except zlib.error as e:
        raise ValueError(f"{path}: a broken gzip file ({e})") from None


def _text_of(data, path):
    """A file's UTF-8 bytes as text, a leading byte order mark dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_text(path):
    """The UTF-8 text of a regular file, plain or gzipped (see _read_file)."""
    return _text_of(_read_file(path), _os.fspath(path))


def _mode_size(st):
    return st.st_mode, st.st_size


def _write_target(path):
    """The absolute path of the file that writing `path` replaces: `path`, or
    where its symbolic links lead (the link stays and its file gets the new
    content, as open() would write it).  ValueError if that is not a regular
    file: a device, FIFO, socket or directory is never replaced by a file."""
    given = _os.fsdecode(_os.fspath(path))
    path = _os.path.abspath(given)
    if _os.path.islink(path):
        path = _os.path.realpath(path)
    try:
        mode = _os.stat(path).st_mode
    except OSError as e:   # none there (the write says why if it cannot make one)
        import errno

        if e.errno == errno.ELOOP:
            raise ValueError(f"cannot write {given}: {e.strerror}") from None
        return path
    if not _stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "a special file")
        raise ValueError(f"cannot write {given}: it is {kind}, not a regular file")
    return path


def _existing_mode(path):
    """The permission bits of `path` if it is a regular file, else None."""
    try:
        st = _os.stat(path)
    except OSError:
        return None
    return _stat.S_IMODE(st.st_mode) if _stat.S_ISREG(st.st_mode) else None


def _check_not_input(outputs, inputs):
    """What every writer checks before writing anything: ValueError if an
    output is one of the inputs -- the same path, a symbolic link to it, or
    another hard link of the same file."""
    read = []
    for path in inputs:
        try:
            read.append((_os.stat(path), path))
        except (OSError, ValueError):
            pass
    for out in outputs:
        try:
            st = _os.stat(out)
        except (OSError, ValueError):
            continue
        for other, path in read:
            if _os.path.samestat(st, other):
                raise ValueError(f"the output {out} is the input {path}")


def _atomic_write(path, text, keep_mode=None):
    """Write `text` (UTF-8) to `path` atomically: the data goes to a new file
    in the same directory, which is synced, then renamed over `path`, so a
    crash leaves the old file or the new one, never half of one.

    A new file gets the mode open() would give it (0o666 less the umask); a
    file that exists keeps its mode (`keep_mode`: the mode of one the caller
    removed).  On Linux the data is written to an
    unnamed file (O_TMPFILE) that gets a name only just before the rename, so
    a process killed while writing leaves nothing behind; elsewhere the
    temporary name is hidden, ends in ".tmp" and is removed on any error."""
    path = _write_target(path)
    data = text.encode("utf-8")
    directory = _os.path.dirname(path)
    if keep_mode is None:
        keep_mode = _existing_mode(path)
    fd, tmp = _open_unnamed(directory, path)
    try:
        try:
            if keep_mode is not None and hasattr(_os, "fchmod"):
                _os.fchmod(fd, keep_mode)
            view = memoryview(data)
            while view:
                view = view[_os.write(fd, view):]
            _os.fsync(fd)
            if tmp is None:
                tmp = _link_unnamed(fd, directory, path)
        finally:
            _os.close(fd)
        if tmp is None:  # no way to give the unnamed file a name: write a named one
            _atomic_write_named(path, data, directory, keep_mode)
            return
        _os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            _unlink_quietly(tmp)
    _sync_directory(directory)


def _temp_name(directory, path):
    base = _os.path.basename(path)[:100]
    return _os.path.join(directory, f".{base}.{_os.urandom(6).hex()}.tmp")


def _unlink_quietly(path):
    """Remove a temporary file on the way out of an error (or a success that
    no longer needs it); one that is already gone, or cannot go, is left."""
    try:
        _os.unlink(path)
    except OSError:
        pass


def _open_unnamed(directory, path):
    """(fd, None) for an unnamed file in `directory` (Linux O_TMPFILE), else
    (fd, name) for a new hidden file."""
    flags = _os.O_WRONLY | getattr(_os, "O_CLOEXEC", 0) | getattr(_os, "O_BINARY", 0)
    if hasattr(_os, "O_TMPFILE"):
        try:
            return _os.open(directory, flags | _os.O_TMPFILE, 0o666), None
        except OSError:
            pass  # not supported by this file system
    return _open_named(directory, path, flags)


def _open_named(directory, path, flags):
    while True:
        tmp = _temp_name(directory, path)
        try:
            return _os.open(tmp, flags | _os.O_CREAT | _os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _link_unnamed(fd, directory, path):
    """Give the unnamed file `fd` a hidden temporary name; None if impossible."""
    tmp = _temp_name(directory, path)
    try:
        _os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
    except (OSError, NotImplementedError):
        return None
    return tmp


def _atomic_write_named(path, data, directory, keep_mode):
    flags = _os.O_WRONLY | getattr(_os, "O_CLOEXEC", 0) | getattr(_os, "O_BINARY", 0)
    fd, tmp = _open_named(directory, path, flags)
    try:
        with _os.fdopen(fd, "wb") as f:
            if keep_mode is not None and hasattr(_os, "fchmod"):
                _os.fchmod(f.fileno(), keep_mode)
            f.write(data)
            f.flush()
            _os.fsync(f.fileno())
        _os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _sync_directory(directory)


def _sync_directory(directory):
    """Make the rename itself durable (POSIX); best effort."""
    try:
        fd = _os.open(directory, _os.O_RDONLY)
    except OSError:
        return
    try:
        _os.fsync(fd)
    except OSError:
        pass
    finally:
        _os.close(fd)


def _open_temporary(directory, name):
    """A file to write before it is renamed over `name`: (fd, path or None).
    Where the system can (Linux), it has no name until it is complete, so a
    process killed while writing leaves nothing behind.  Its mode is the one
    open() gives (0666 less the umask).  It is open for reading too (what
    was written may be moved: encode_files splits one document so)."""
    flags = _os.O_RDWR | getattr(_os, "O_CLOEXEC", 0)
    if hasattr(_os, "O_TMPFILE") and _os.path.isdir("/proc/self/fd"):
        try:
            return _os.open(directory, _os.O_TMPFILE | flags, 0o666), None
        except OSError:
            pass  # a file system without unnamed files
    tmp = _os.path.join(directory, f".tmp-{_os.urandom(6).hex()}-{name}")
    return _os.open(tmp, _os.O_CREAT | _os.O_EXCL | flags, 0o666), tmp


def _name_temporary(fd, path):
    """A hidden name beside `path` for the unnamed temporary file `fd`."""
    tmp = _os.path.join(_os.path.dirname(path),
                        f".tmp-{_os.urandom(6).hex()}-{_os.path.basename(path)}")
    fds = _os.open("/proc/self/fd", _os.O_RDONLY)
    try:  # linkat(..., AT_SYMLINK_FOLLOW): the file the descriptor's link points to
        _os.link(str(fd), tmp, src_dir_fd=fds, follow_symlinks=True)
    finally:
        _os.close(fds)
    return tmp


def _publish(fd, tmp, path):
    """Give the complete temporary file its final name (replacing any file)."""
    if tmp is None:
        tmp = _name_temporary(fd, path)
    try:
        _os.replace(tmp, path)
    except BaseException:
        _os.unlink(tmp)
        raise


class FileSet:
    """Files published as a set (train and validation arrays with their
    sidecars, a transformers directory, Dask shards with their index, for
    tools/train_dask.py or any program): each is
    written in full to a temporary file beside it, then, once all are
    written and synced, all are renamed into place.  An error before that
    (a full disk on the last file) leaves the old files as they were and no
    temporary behind; an error among the renames puts back the old files it
    had replaced (kept under hidden names until the set is in place).

        with FileSet() as files:
            fd = files.open(path)      # a descriptor to write the file to
            files.text(other, text)    # or a whole text
            files.publish()

    A file that `describes` others (a sidecar) loses its old version before
    any file of the set is renamed: for no moment does it describe a new file."""

    def __init__(self):
        self._items = []  # [path, fd, temporary name or None (unnamed), describes]

    def __enter__(self):
        return self

    def open(self, path, keep_mode=None, describes=False):
        """A descriptor to write `path`'s new content to; the file gets the mode
        of the one it replaces (`keep_mode`: of one the caller removed), else
        the mode open() gives."""
        path = _write_target(path)
        if keep_mode is None:
            keep_mode = _existing_mode(path)
        fd, tmp = _open_temporary(_os.path.dirname(path), _os.path.basename(path))
        self._items.append([path, fd, tmp, describes])
        if keep_mode is not None and hasattr(_os, "fchmod"):
            _os.fchmod(fd, keep_mode)
        return fd

    def adopt(self, written, path, describes=False):
        """Publish `written`, a complete file (synced, in `path`'s directory, made
        by another process: a Dask worker's shard), as `path`; removed if the
        set is not published."""
        self._items.append([_write_target(path), None, _os.fsdecode(_os.fspath(written)),
                            describes])

    def text(self, path, text, keep_mode=None, describes=False):
        """`path`'s new content: a text, UTF-8."""
        fd = self.open(path, keep_mode, describes)
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[_os.write(fd, view):]

    def publish(self):
        for item in self._items:
            if item[1] is not None:
                _os.fsync(item[1])
        for item in self._items:  # every file gets a name before any is renamed
            if item[2] is None:
                item[2] = _name_temporary(item[1], item[0])
        order = sorted(self._items, key=lambda item: not item[3])  # sidecars' old ones first
        kept = {}  # path -> the hidden name of the file it had (a hard link to it)
        done = []  # the paths replaced or removed so far
        try:
            for path, _, _, _ in order:
                if _os.path.isfile(path) and not _os.path.islink(path):
                    backup = _temp_name(_os.path.dirname(path), path)
                    try:
                        _os.link(path, backup)
                    except OSError:  # a file system without hard links: no way back
                        continue
                    kept[path] = backup
            for path, _, _, describes in order:
                if describes and path in kept:
                    _os.unlink(path)
                    done.append(path)
            for item in order:
                _os.replace(item[2], item[0])
                item[2] = None
                done.append(item[0])
        except BaseException:
            for path in set(done):  # the others still are the old files
                try:
                    if path in kept:
                        _os.replace(kept.pop(path), path)
                    else:
                        _os.unlink(path)
                except OSError:
                    pass
            raise
        finally:
            for backup in kept.values():
                _unlink_quietly(backup)
        for directory in {_os.path.dirname(item[0]) for item in self._items}:
            _sync_directory(directory)

    def __exit__(self, kind, value, traceback):
        for _, fd, tmp, _ in self._items:
            if fd is not None:
                _os.close(fd)
            if tmp is not None:
                _unlink_quietly(tmp)
        return False
