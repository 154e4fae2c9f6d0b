"""subprocess: a child interpreter that evalprof does not trace."""
import subprocess
import sys


def parent_work():
    return sum(i * i for i in range(100))


out = subprocess.run([sys.executable, "-c", "print(6 * 7)"],
                     capture_output=True, text=True, check=True).stdout
print(out.strip(), parent_work())
