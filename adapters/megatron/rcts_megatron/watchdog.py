"""A memory cap for one adapter process: a thread reads this process's resident set
every 0.2 s and, past RCTS_MEGATRON_RSS_LIMIT_MB (default 1536; a small case peaks near
900 MB, most of it torch and megatron-core), stops the process, so a runaway inside
megatron-core fails its case in seconds instead of taking a shared machine down.

Before it stops, it prints every thread's Python stack (faulthandler) and says what ran
away: when one megatron-core line is on the main thread's stack many times over, the
process was recursing without end there, and that is reported as a raise inside
megatron-core ("raised: ...", as the adapter reports any exception Megatron's code
raises) through `on_trip`, with the line and how often it was re-entered."""
import _thread
import collections
import faulthandler
import os
import sys
import threading
import time

tripped = {"mb": 0}
RECURSION = 50  # a megatron-core line this many times on one stack: recursion without end


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // (1 << 20)


def runaway(frame):
    """'<file>:<line> re-entered N times' for the megatron-core line most often on the stack
    from `frame` down, when it is there RECURSION times or more; else None."""
    seen = collections.Counter()
    while frame is not None:
        f = frame.f_code.co_filename
        if "megatron" in f:
            seen[(f.split("megatron/", 1)[-1], frame.f_lineno)] += 1
        frame = frame.f_back
    if not seen:
        return None
    (where, line), n = seen.most_common(1)[0]
    return f"{where}:{line} re-entered {n} times" if n >= RECURSION else None


def start(on_trip=None):
    """on_trip(message) runs before the process stops, with the runaway's description when
    there is one; its return value is the exit status (None: 3). Without a runaway the
    main thread is interrupted first, so the adapter can report where Megatron was."""
    limit = int(os.environ.get("RCTS_MEGATRON_RSS_LIMIT_MB", "1536"))
    main_id = threading.main_thread().ident

    def watch():
        while True:
            time.sleep(0.2)
            mb = _rss_mb()
            if mb > limit:
                tripped["mb"] = mb
                os.write(2, f"error: resident memory {mb} MB passed {limit} MB; the stacks at that moment:\n".encode())
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                loop = runaway(sys._current_frames().get(main_id))
                if loop and on_trip:
                    rc = on_trip(f"megatron-core recursed without end: {loop} (the process passed the adapter's "
                                 f"memory cap of {limit} MB)")
                    sys.stdout.flush()
                    os._exit(3 if rc is None else rc)
                _thread.interrupt_main()
                time.sleep(2)  # an interrupt raised inside autograd's backward can be swallowed:
                os.write(2, f"error: resident memory {mb} MB passed the adapter's cap of {limit} MB "
                            f"(RCTS_MEGATRON_RSS_LIMIT_MB); stopping\n".encode())
                os._exit(3)

    threading.Thread(target=watch, daemon=True).start()
    return limit
