"""A text trace made mostly of names, for the damage tests that need many
or long function names (cli_hostile.py, cli_memory.py)."""


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
