"""Recurses until RecursionError: the traceback says how deep it got."""


def down(n):
    return down(n + 1)


down(0)
