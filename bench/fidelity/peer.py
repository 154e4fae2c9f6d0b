"""Read a `python3.15 -m profiling.sampling run --opcodes --binary` file
as folded stacks, for bench/fidelity/run.py to read as it reads
evalprof's: run by the interpreter that recorded it (its own
profiling.sampling reads the file).

    python3.15 bench/fidelity/peer.py FILE.bin PERIOD_NS

Prints "frame;frame;...;file:LINE;op:NAME NS" lines, each sample
standing for PERIOD_NS nanoseconds (the rate's period).
"""
import collections
import sys

from profiling.sampling.binary_reader import BinaryReader
from profiling.sampling.collector import Collector, extract_lineno
from profiling.sampling.opcode_utils import get_opcode_info


class Folded(Collector):
    """Each sample as a stack in evalprof's folded form (bench/fidelity/
    run.py reads both the same way): the frames outermost first, each
    "func (file:1)", then the leaf's line as "file:LINE" and its opcode
    as "op:NAME" (the specialized form's name)."""

    def __init__(self):
        self.stacks = collections.Counter()
        self.samples = 0

    def collect(self, stack_frames, timestamps_us=None):
        weight = len(timestamps_us) if timestamps_us else 1
        for interp in stack_frames:
            for thread in interp.threads:
                frames = thread.frame_info
                if not frames:
                    continue
                self.samples += weight
                leaf = frames[0]
                path = ["%s (%s:1)" % (f.funcname, f.filename)
                        for f in reversed(frames)]
                path.append("%s:%d" % (leaf.filename,
                                       extract_lineno(leaf.location)))
                op = getattr(leaf, "opcode", None)
                if op is not None:
                    path.append("op:" + get_opcode_info(op)["opname"])
                self.stacks[";".join(path)] += weight

    def export(self, filename):
        return True


def main():
    path, period_ns = sys.argv[1], int(sys.argv[2])
    fig = Folded()
    with BinaryReader(path) as r:
        r.replay_samples(fig)
    for stack, n in sorted(fig.stacks.items()):
        print("%s %d" % (stack, n * period_ns))


if __name__ == "__main__":
    main()
