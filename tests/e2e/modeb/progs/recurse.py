"""Recursion 5,000 frames deep (and back), several times."""
import sys

sys.setrecursionlimit(12000)


def down(n):
    if n == 0:
        return 0
    return 1 + down(n - 1)


class Node:
    def __init__(self, nxt):
        self.nxt = nxt

    def length(self):
        return 1 + (self.nxt.length() if self.nxt else 0)


def main():
    total = 0
    for _ in range(3):
        total += down(5000)
    head = None
    for _ in range(5000):
        head = Node(head)
    total += head.length()
    print(total)


main()
