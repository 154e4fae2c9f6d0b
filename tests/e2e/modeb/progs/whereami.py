"""Prints what a program sees of how it was started and of its stack:
argv, __file__, co_filename, sys.path[0], __main__'s names, the stack
(also from an atexit handler), then exits through sys.exit(ARGV[1])."""
import atexit
import sys
import traceback


def depth():
    n, f = 0, sys._getframe()
    while f is not None:
        n, f = n + 1, f.f_back
    return n


def at_exit():
    print("atexit depth", depth())
    traceback.print_stack()


print("argv", sys.argv)
print("file", globals().get("__file__"))
print("co_filename", sys._getframe().f_code.co_filename)
print("path0", sys.path[0] if sys.path else None)
print("main", sorted(globals()))
print("loader", type(__loader__).__name__, __spec__ and __spec__.name,
      repr(__package__))
f_back = sys._getframe().f_back
print("depth", depth(), "back", f_back and f_back.f_code.co_name)
traceback.print_stack()
atexit.register(at_exit)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
