#!/usr/bin/env python3
"""Bad input never crashes: random bytes and mutated copies of the
committed perf script, folded and trace samples are fed to `evalprof
flamegraph`, `evalprof perf --script` and `evalprof export --format
folded`; each run must end with status 0 or 1 (never a signal) and, when
it fails, say why: every message on stderr is one "evalprof: ..." line.  Seeded, so every run tries the same inputs.

usage: garbage.py [ROUNDS]   (EVALPROF: the binary; DATA: tests/flame/data)
"""
import os
import random
import subprocess
import sys
import tempfile

EVP = os.environ["EVALPROF"]
DATA = os.environ.get("DATA") or os.path.join(os.path.dirname(__file__), "data")


def mutate(rnd, b):
    b = bytearray(b)
    for _ in range(rnd.randint(1, 20)):
        op = rnd.randint(0, 3)
        i = rnd.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[i] = rnd.randrange(256)
        elif op == 1:
            b[i:i] = bytes(rnd.choice([b"\n", b";", b" ", b"(", b")", b":", b"\t",
                                       b"+0x", b"->", b"[unknown]", b"\xff", b"\x00",
                                       b"9" * 30, b" 1 2"]))
        elif op == 2 and b:
            del b[i:i + rnd.randint(1, 64)]
        else:
            b = b[:i]
    return bytes(b)


def main(rounds):
    rnd = random.Random(5)
    seeds = {n: open(os.path.join(DATA, n), "rb").read()
             for n in ("edge.script", "py312-startup.script", "sample.folded",
                       "small.trace", "xcheck.script")}
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "in")
        for r in range(rounds):
            name = rnd.choice(sorted(seeds))
            data = mutate(rnd, seeds[name]) if r % 5 else os.urandom(rnd.randint(0, 4096))
            with open(f, "wb") as o:
                o.write(data)
            for args in (["flamegraph", "-o", os.path.join(tmp, "o.svg"), f],
                         ["perf", "--script", f, "-o", os.path.join(tmp, "p")],
                         ["export", "--format", "folded", "--ops", "--phases", f],
                         ["perf", "--script", f, "--trace", os.path.join(DATA, "small.trace"),
                          "--startup", "-o", os.path.join(tmp, "q")]):
                p = subprocess.run([EVP, *args], capture_output=True, timeout=60)
                err = p.stderr.decode(errors="replace").strip().splitlines()
                # Every message is one "evalprof: ..." line (warnings about
                # the damage may come before the error).
                stray = [l for l in err if not l.startswith("evalprof: ")]
                if p.returncode not in (0, 1) or stray or (p.returncode == 1 and not err):
                    bad += 1
                    print(f"FAIL: round {r} ({name}): evalprof {args[0]} exited "
                          f"{p.returncode}; stderr: {err[-3:]}")
    if bad:
        print(f"{bad} runs misbehaved")
        return 1
    print(f"ok: {rounds} rounds of damaged input, no crash, messages one line each")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 150))
