"""python -m evalprof: see evalprof._cli (usage: python -m evalprof -h)."""
import sys

from evalprof._cli import main

if __name__ == "__main__":
    sys.exit(main())
