"""Works until killed: the killed-trace test."""
import sys


def spin():
    x = 0
    for i in range(1000):
        x += i
    return x


print("started", flush=True)
while True:
    spin()
