"""The kit's error types: bad input an adapter refuses. The message names the file, the
JSON path or field, and the value; an adapter's main prints it and exits 2 (no
traceback), as rcts does."""


class AdapterError(Exception):
    pass


class DumpError(AdapterError):
    """A dump that cannot be read or written; the message names the file and JSON path."""


def where(file, path, msg):
    """The message form every refusal uses: FILE: /json/path: what is wrong."""
    return f"{file}: {path or '/'}: {msg}"
