"""A loop of Python calls: the call instruction is most of its cost."""
import sys


def callee(a):
    return a


def main(n):
    for i in range(n):
        callee(i)


main(int(sys.argv[1]))
