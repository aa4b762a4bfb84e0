"""Unit tests of the release plumbing of the DeepSpeed adapter (plain Python, no torch, no
deepspeed): scripts/check-deepspeed's --release / --shim and rcts_deepspeed/releases.py.

  python3 tests/adapter/deepspeed/releases_test.py      (ctest: adapter.deepspeed.releases)
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ADAPTER = os.path.join(ROOT, "adapters", "deepspeed")


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


releases = load("rcts_deepspeed_releases", os.path.join(ADAPTER, "rcts_deepspeed", "releases.py"))
check = load("check_deepspeed", os.path.join(ADAPTER, "check_deepspeed.py"))


class Release(unittest.TestCase):
    def test_version_must_match(self):
        releases.check_release("", "0.19.8", "/venv")  # nothing asked: anything goes
        releases.check_release("0.19.5", "0.19.5", "/x")
        with self.assertRaisesRegex(releases.ReleaseError, r"RCTS_DEEPSPEED_RELEASE=0\.19\.5: .* is 0\.19\.8 \(/venv\)"):
            releases.check_release("0.19.5", "0.19.8", "/venv")

    def test_shims(self):
        self.assertEqual(releases.shims(""), [])
        self.assertEqual(releases.shims("cpu_stream, cpu_stream"), ["cpu_stream"])
        with self.assertRaisesRegex(releases.ReleaseError, "unknown shim 'gpu'"):
            releases.shims("cpu_stream,gpu")
        self.assertIn("SHIM cpu_stream", releases.describe(["cpu_stream"]))
        self.assertEqual(releases.describe([]), "")
        self.assertEqual(tuple(sorted(releases.SHIMS)), check.SHIM_NAMES)

    def test_cpu_stream_only_where_none(self):
        class Acc:
            @property
            def Stream(self):
                return None

        a = Acc()
        self.assertTrue(releases.install_cpu_stream(a))
        self.assertIsNone(a.Stream(device="cpu"))
        self.assertFalse(releases.install_cpu_stream(a))  # now callable: left alone


class CheckDeepspeed(unittest.TestCase):
    def test_pinned_newest_is_the_venvs(self):
        pinned = check.releases()
        self.assertEqual(pinned, sorted(pinned, key=lambda v: tuple(map(int, v.split(".")))))
        with open(os.path.join(ROOT, "adapters", "requirements-deepspeed.txt")) as f:
            self.assertIn(f"deepspeed=={pinned[-1]}", f.read())
        self.assertEqual(check.release_path(pinned[-1]), "")

    def test_release_path(self):
        with tempfile.TemporaryDirectory() as d:
            old = os.environ.get("RCTS_DSREL_DIR")
            os.environ["RCTS_DSREL_DIR"] = d
            try:
                r = check.releases()[0]
                with self.assertRaisesRegex(check.AdapterError, "no deepspeed at .*deepspeed-releases --install"):
                    check.release_path(r)
                os.makedirs(os.path.join(d, r, "deepspeed"))
                open(os.path.join(d, r, "deepspeed", "__init__.py"), "w").close()
                self.assertEqual(check.release_path(r), os.path.join(d, r))
                with self.assertRaisesRegex(check.AdapterError, "--release 9.9.9: not a release of"):
                    check.release_path("9.9.9")
            finally:
                if old is None:
                    os.environ.pop("RCTS_DSREL_DIR")
                else:
                    os.environ["RCTS_DSREL_DIR"] = old

    def test_env(self):
        a = argparse.Namespace(deepspeed_path="/dsrel/0.19.5", release="0.19.5", shim=["cpu_stream"])
        env = check.adapter_env(a)
        self.assertTrue(env["PYTHONPATH"].startswith("/dsrel/0.19.5" + os.pathsep))
        self.assertEqual((env["RCTS_DEEPSPEED_RELEASE"], env["RCTS_DEEPSPEED_SHIMS"]), ("0.19.5", "cpu_stream"))
        os.environ["RCTS_DEEPSPEED_SHIMS"] = "cpu_stream"  # a stale one is not passed on
        try:
            env = check.adapter_env(argparse.Namespace(deepspeed_path="", release="", shim=[]))
        finally:
            os.environ.pop("RCTS_DEEPSPEED_SHIMS")
        self.assertNotIn("RCTS_DEEPSPEED_SHIMS", env)
        self.assertNotIn("RCTS_DEEPSPEED_RELEASE", env)
        self.assertTrue(env["PYTHONPATH"].startswith(ADAPTER + os.pathsep))


if __name__ == "__main__":
    sys.exit(unittest.main())
