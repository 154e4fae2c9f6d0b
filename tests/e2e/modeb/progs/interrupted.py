"""Interrupted (SIGINT) two frames down: KeyboardInterrupt's traceback,
then the process dies of SIGINT."""
import os
import signal


def inner():
    os.kill(os.getpid(), signal.SIGINT)
    signal.pause()


def outer():
    inner()


print("before", flush=True)
outer()
