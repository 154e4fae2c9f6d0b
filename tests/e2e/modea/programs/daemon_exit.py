"""Daemon threads doing file I/O while the main thread exits (sample.sh):
the interpreter's finalization clears and frees their thread states while
they still run C code, and take samples.

    daemon_exit.py [THREADS]
"""
import os
import random
import sys
import threading
import time

ran = set()


def io_loop():
    while True:
        with open(__file__, "rb") as src:
            data = src.read(200)
            with open(os.devnull, "wb") as out:
                out.write(data)
                time.sleep(random.random() / 2000)
        ran.add(threading.get_ident())


n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
for _ in range(n):
    threading.Thread(target=io_loop, daemon=True).start()
while len(ran) < n:
    time.sleep(0.001)
sys.exit(0)
