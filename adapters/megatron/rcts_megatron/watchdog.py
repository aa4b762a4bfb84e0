"""A memory cap for one adapter process: a thread reads this process's resident set
every 0.2 s and, past RCTS_MEGATRON_RSS_LIMIT_MB (default 1536; a small case peaks near
900 MB, most of it torch and megatron-core), interrupts the main thread, so a runaway inside megatron-core fails its case in
seconds instead of taking a shared machine down."""
import _thread
import os
import threading
import time

tripped = {"mb": 0}


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // (1 << 20)


def start():
    limit = int(os.environ.get("RCTS_MEGATRON_RSS_LIMIT_MB", "1536"))

    def watch():
        while True:
            time.sleep(0.2)
            mb = _rss_mb()
            if mb > limit:
                tripped["mb"] = mb
                _thread.interrupt_main()
                time.sleep(2)  # an interrupt raised inside autograd's backward can be swallowed:
                os.write(2, f"error: resident memory {mb} MB passed the adapter's cap of {limit} MB "
                            f"(RCTS_MEGATRON_RSS_LIMIT_MB); stopping\n".encode())
                os._exit(3)

    threading.Thread(target=watch, daemon=True).start()
    return limit
