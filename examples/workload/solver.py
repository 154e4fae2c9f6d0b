"""A recursive solver: Sudoku by constraint propagation and search.

Peter Norvig's classic approach, written from its description: each square
keeps the set of digits still possible; assigning a digit eliminates it
from the square's peers, which may force further assignments; when
propagation stalls, the square with the fewest candidates is tried digit
by digit, recursively, on a copy of the grid.  Also an N-queens counter
with generators, for a different shape of recursion.

    workload(scale) -> (puzzles solved, queens solutions, checksum)
"""

DIGITS = "123456789"
ROWS = "ABCDEFGHI"
COLS = DIGITS


def cross(a, b):
    return [x + y for x in a for y in b]


SQUARES = cross(ROWS, COLS)
UNITLIST = ([cross(ROWS, c) for c in COLS] +
            [cross(r, COLS) for r in ROWS] +
            [cross(rs, cs) for rs in ("ABC", "DEF", "GHI")
             for cs in ("123", "456", "789")])
UNITS = {s: [u for u in UNITLIST if s in u] for s in SQUARES}
PEERS = {s: set(sum(UNITS[s], [])) - {s} for s in SQUARES}


class Contradiction(Exception):
    pass


def assign(values, s, d):
    for other in values[s].replace(d, ""):
        eliminate(values, s, other)
    return values


def eliminate(values, s, d):
    if d not in values[s]:
        return values
    values[s] = values[s].replace(d, "")
    remaining = values[s]
    if not remaining:
        raise Contradiction(s)
    if len(remaining) == 1:
        d2 = remaining
        for peer in PEERS[s]:
            eliminate(values, peer, d2)
    for unit in UNITS[s]:
        places = [sq for sq in unit if d in values[sq]]
        if not places:
            raise Contradiction(s)
        if len(places) == 1:
            assign(values, places[0], d)
    return values


def parse(grid):
    values = {s: DIGITS for s in SQUARES}
    chars = [c for c in grid if c in DIGITS or c in "0."]
    for s, c in zip(SQUARES, chars):
        if c in DIGITS:
            assign(values, s, c)
    return values


def search(values):
    if all(len(values[s]) == 1 for s in SQUARES):
        return values
    n, s = min((len(values[s]), s) for s in SQUARES if len(values[s]) > 1)
    for d in values[s]:
        try:
            return search(assign(dict(values), s, d))
        except Contradiction:
            continue
    raise Contradiction(s)


def solve(grid):
    return search(parse(grid))


def check(values):
    return all(sorted(values[s] for s in unit) == list(DIGITS)
               for unit in UNITLIST)


PUZZLES = [
    "4.....8.5.3..........7......2.....6.....8.4......1.......6.3.7.5..2.....1.4......",
    "52...6.........7.13...........4..8..6......5...........418.........3..2...87.....",
    "6.....8.3.4.7.................5.4.7.3..2.....1.6.......2.....5.....8.6......1....",
    "48.3............71.2.......7.5....6....2..8.............1.76...3.....4......5....",
    "....14....3....2...7..........9...3.6.1.............8.2.....1.4....5.6.....7.8...",
    "85...24..72......9..4.........1.7..23.5...9...4...........8..7..17..........36.4.",
]


def queens(n):
    def place(row, cols, diag1, diag2):
        if row == n:
            yield 1
            return
        for c in range(n):
            if c in cols or row + c in diag1 or row - c in diag2:
                continue
            yield from place(row + 1, cols | {c}, diag1 | {row + c},
                             diag2 | {row - c})
    return sum(place(0, frozenset(), frozenset(), frozenset()))


def workload(scale=1.0):
    rounds = max(1, int(24 * scale))
    solved = 0
    checksum = 0
    for _ in range(rounds):
        for p in PUZZLES:
            values = solve(p)
            if not check(values):
                raise AssertionError("wrong solution for %s" % p)
            solved += 1
            checksum = (checksum * 7 + int(values["A1"] + values["I9"])) \
                % 1000003
    q = queens(8 if scale >= 0.5 else 7)
    return solved, q, checksum
