"""A JSON value read strictly, stdlib only (the drivers run without torch): every value
keeps its file and JSON path, so a refusal names where it is (errors.where)."""
import json

from .errors import AdapterError, DumpError, where


def read_json(path, what):
    """The JSON in `path`; an unreadable file or bad JSON is an AdapterError naming `what` and the file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise AdapterError(f"{what} {path}: {e.strerror}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AdapterError(f"{what} {path}: not JSON: {e}") from e


class Json:
    """A JSON value with its file and path, for errors that say where."""

    def __init__(self, file, value, path=""):
        self.file, self.value, self.path = file, value, path

    def fail(self, msg):
        raise DumpError(where(self.file, self.path, msg))

    def _typed(self, types, what):
        if not isinstance(self.value, types) or isinstance(self.value, bool) and bool not in types:
            self.fail(f"{self.value!r} is not {what}")
        return self.value

    def string(self):
        return self._typed((str,), "a string")

    def object(self):
        return self._typed((dict,), "an object")

    def number(self):
        return self._typed((int, float), "a number")

    def __getitem__(self, key):
        if isinstance(key, int):
            if not isinstance(self.value, list) or key >= len(self.value):
                self.fail(f"expected an array with an element {key}")
        elif not isinstance(self.value, dict) or key not in self.value:
            self.fail(f"missing field '{key}'")
        return Json(self.file, self.value[key], f"{self.path}/{key}")

    def items(self):
        if not isinstance(self.value, list):
            self.fail("expected an array")
        return [self[i] for i in range(len(self.value))]
