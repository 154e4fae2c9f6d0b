"""What the damage suite's command-line tests share (cli_hostile.py,
cli_memory.py): whether evalprof is an AddressSanitizer build, and a text
trace made mostly of names, for the tests that need many or long function
names."""


def sanitized(evalprof):
    """Is the binary at EVALPROF built with AddressSanitizer?"""
    with open(evalprof, "rb") as f:
        return b"__asan_init" in f.read()


def names_trace(path, n, name_len, dir_len=0):
    """Write to PATH a text trace of N functions, each entered and left
    once: function I is named NAME_LEN bytes of "f" and "_I", in the file
    "/DIR/mI.py" (DIR: DIR_LEN bytes of "d", or "src" when 0)."""
    where = "d" * dir_len if dir_len else "src"
    with open(path, "w") as f:
        f.write("# python: /usr/bin/python3\n# argv: names\n"
                "# start time: 1700000000 s (since epoch)\n"
                "# start clock: 10.000000000 s (on clock)\n"
                "# end clock: 20.000000000 s (on clock)\n")
        for i in range(1, n + 1):
            f.write(f"# function: {i}\t{i}\t/{where}/m{i}.py\t"
                    f"{'f' * name_len}_{i}\n")
        f.write("10.000000000 0\n")
        t = 10_000_001_000
        for i in range(1, n + 1):
            for kind in (3, 4):
                f.write(f"{t // 10**9}.{t % 10**9:09d} {kind} {i}\n")
                t += 1000
        f.write(f"{t // 10**9}.{t % 10**9:09d} 1\n")
