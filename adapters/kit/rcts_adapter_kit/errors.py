"""The kit's error types: bad input an adapter refuses. The message names the file, the
JSON path or field, and the value; an adapter's main prints it and exits 2 (no
traceback), as rcts does. And where a framework's own code raised, for its ERRORED
marker."""
import traceback


class AdapterError(Exception):
    pass


class DumpError(AdapterError):
    """A dump that cannot be read or written; the message names the file and JSON path."""


def where(file, path, msg):
    """The message form every refusal uses: FILE: /json/path: what is wrong."""
    return f"{file}: {path or '/'}: {msg}"


def raised_in(exc, package):
    """(path below `package`/, line) of the innermost frame of exc's traceback inside the
    framework package (e.g. "megatron", "torch"), or None: a raise is reported at the
    framework's line, not the adapter's. An absolute `package` is the package's directory
    (where an adapter's own path holds the package's name: adapters/deepspeed)."""
    mark = package.rstrip("/") + "/" if package.startswith("/") else f"/{package}/"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if (f.filename.startswith(mark) if package.startswith("/") else mark in f.filename)]
    if not frames:
        return None
    return frames[-1].filename.split(mark, 1)[-1], frames[-1].lineno
