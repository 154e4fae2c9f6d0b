"""A known hot line: the loop body of work() (line 8) does nearly all the
arithmetic; main()'s lines run a few times.  Argument: work()'s n."""


def work(n):
    t = 0
    for i in range(n):
        t += (i * i) % 7 + (i << 3) ^ (i >> 2) - (i * 3) // 5 + i * i * i
    return t


def main():
    import sys
    s = 0
    for k in range(20):
        s += len(str(k))
    print(work(int(sys.argv[1]) if len(sys.argv) > 1 else 30000) + s)


main()
