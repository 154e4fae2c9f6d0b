"""python -m evalprof: see evalprof._cli (usage: python -m evalprof -h)."""
import sys

from evalprof._cli import main

if __name__ == "__main__":
    # sys.exit is looked up before main() runs: main() empties __main__
    # (this module's globals) for the program.
    sys.exit(main())
