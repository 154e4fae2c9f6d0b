"""A thread started with _thread.start_new_thread, not through
threading: it runs raw_work() for about N iterations while the main
thread waits for it on a lock, then a second such thread raises, which
_thread reports as it does untraced."""
import _thread
import sys


def raw_work(n, done):
    x = 1
    for i in range(n):
        x = x * 3 % 1000003
    print("raw", x, flush=True)
    done.release()


def raises():
    raise ValueError("from a raw thread")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(raw_work, (n, done))
    done.acquire()
    # the unhandled exception's report names this function, as untraced
    hooked = _thread.allocate_lock()
    hooked.acquire()

    def hook(args):
        # 3.11, 3.12: the object is the function; 3.13: the message
        # names it
        named = getattr(args.object, "__name__", None) == "raises" or \
            "function raises" in (args.err_msg or "")
        print("unhandled, naming the function:", named,
              args.exc_type.__name__, flush=True)
        hooked.release()

    sys.unraisablehook = hook
    _thread.start_new_thread(raises, ())
    hooked.acquire()
    # a wrong call fails as it does untraced
    try:
        _thread.start_new_thread(42, ())
    except TypeError as e:
        print("TypeError", e)


main()
