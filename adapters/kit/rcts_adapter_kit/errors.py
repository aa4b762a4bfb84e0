"""The one error type of the kit: bad input an adapter refuses. Its message names the file,
the JSON path or field, and the value; an adapter's main prints it and exits 2 (no
traceback), as rcts does."""


class AdapterError(Exception):
    pass


def where(file, path, msg):
    """The message form every refusal uses: FILE: /json/path: what is wrong."""
    return f"{file}: {path or '/'}: {msg}"
