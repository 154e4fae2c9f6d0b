"""Sampled mode: one hot function whose hot line is a chain of
multiplications and modulos (four BINARY_OPs a store: BINARY_OP
dominates), one cold function that does little.  Prints the result so
that the run can be checked against an untraced one."""
import sys


def cold(n):
    return len(str(n))


def hot(n):
    x = 1
    for _ in range(n):
        x = x * 3 % 1000003 * 7 % 1000003
    return x


def main(rounds):
    total = 0
    for _ in range(rounds):
        total += hot(200000)
        total += cold(12345)
    print(total)


main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
