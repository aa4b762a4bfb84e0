"""One adapter process serving many cases, so a driver pays the framework's import once
instead of once per case. Stdlib only: the driver side (`Worker`) runs without torch.

Protocol, one JSON object per line: the driver writes {"argv": [...]} (the arguments a
per-case process would get); the worker answers {"rc", "stdout", "stderr"}: exactly what
that process would have exited with and printed, so the driver reads both paths alike.
After each case the worker calls the adapter's `between()`, which resets what a case may
legitimately change and returns what it must not have left behind (isolation.TorchState);
anything left behind is named in the answer's "leaked" and the worker exits, so the next
case starts in a fresh process. A worker that dies or goes silent mid-case gives that
case an error and is restarted for the next."""
import contextlib
import io
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import traceback

SERVE_FLAG = "--serve"


def serve(main, between, requests=None):
    """Answers each request line with main(argv)'s exit status and output, until EOF."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    # Only answers go to the real stdout: a stray write (a C library, a print outside a
    # case) lands on stderr instead of corrupting the protocol.
    os.dup2(2, 1)
    for line in requests if requests is not None else sys.stdin:
        argv = json.loads(line)["argv"]
        out, err = io.StringIO(), io.StringIO()
        raised = False
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:  # what a process would have exited with
                rc = e.code if isinstance(e.code, int) else (print(e.code, file=err) or 1)
            except Exception:  # noqa: BLE001 (a per-case process would die with this traceback)
                traceback.print_exc(file=err)
                rc, raised = 1, True
        leaked = between()
        answer = {"rc": rc or 0, "stdout": out.getvalue(), "stderr": err.getvalue(), "exiting": bool(leaked or raised)}
        if leaked:
            answer["leaked"] = leaked
        answers.write(json.dumps(answer) + "\n")
        if answer["exiting"]:  # a raise mid-case may have left state no check knows about
            return 0
    return 0


class Worker:
    """The driver's side: `run(argv)` gives (CompletedProcess, failure) where failure is None
    or why the worker could not answer the case (it leaked state, named in the process's
    `leaked`; it died; it took longer than `timeout` seconds); the worker is then gone and
    the next run starts a fresh one."""

    def __init__(self, cmd, env=None, timeout=1800):
        self.cmd, self.env, self.timeout = list(cmd) + [SERVE_FLAG], env, timeout
        self.proc = None
        self.started = 0  # processes started, for the driver's summary

    def run(self, argv):
        if self.proc is None:
            self._start()
        try:
            self.proc.stdin.write(json.dumps({"argv": list(argv)}) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # it died between cases: the read below says how
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            return self._fail(argv, f"the worker gave no answer within {self.timeout} s: killed", grace=0)
        if line is None:
            return self._fail(argv, "the worker exited mid-case", grace=10)
        a = json.loads(line)
        done = subprocess.CompletedProcess(argv, a["rc"], a["stdout"], a["stderr"])
        done.leaked = a.get("leaked", [])
        if a["exiting"]:
            self.close()
        if a.get("leaked"):
            return done, "the case left state behind in the worker: " + "; ".join(a["leaked"])
        return done, None

    def _start(self):
        self.log = tempfile.TemporaryFile(mode="w+")  # its own stderr, read back when it dies
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=self.env, start_new_session=True)
        self.started += 1
        self.lines = queue.Queue()
        threading.Thread(target=_pump, args=(self.proc.stdout, self.lines), daemon=True).start()

    def _fail(self, argv, why, grace):
        rc = self.close(grace)
        tail = self.stderr[-400:].strip()
        why += f" (exit {rc})" if rc else ""
        done = subprocess.CompletedProcess(argv, rc or 1, "", tail)
        done.leaked = []
        return done, why + (f": {tail}" if tail else "")

    def close(self, grace=10):
        """Ends the worker and its process group (nothing it started outlives it); its exit
        status, and what it wrote to stderr in `self.stderr`."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            rc = proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        self.log.seek(0)
        self.stderr = self.log.read()
        self.log.close()
        return rc


def _pump(stream, lines):
    """The worker's answers, line by line, then None at its end of output."""
    with stream:
        for line in stream:
            lines.put(line)
    lines.put(None)
