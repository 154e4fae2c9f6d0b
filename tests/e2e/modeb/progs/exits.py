"""Leaves through sys.exit(3) from inside a function."""
import sys


def finish(code):
    print("finishing")
    sys.exit(code)


finish(3)
