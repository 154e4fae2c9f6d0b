"""Dies of an uncaught exception two frames down."""


def inner(x):
    return {"a": 1}[x]


def outer():
    return inner("missing")


print("before")
outer()
