"""The training run of evalprof's profile-guided CPython build.

cpython/build.sh passes this script to CPython's `make profile-opt` as its
PROFILE_TASK: the interpreter built with -fprofile-generate runs it, and
the counts it leaves decide how GCC lays out the final build.  It runs
CPython's own training task (`-m test --pgo`, the one `make profile-opt`
runs by default) twice, at the same time:

  untraced   as CPython trains it: the eval function's untraced copy
             and the rest of the interpreter are laid out by it;
  sampled    EVALPROF_MODE=sample, at the default rate: the sampled copy
             of the eval function is laid out by its own run.

Without the second run the sampled copy has no profile and is compiled as
without feedback (-fprofile-partial-training), next to code laid out by
one: where its hot handlers fall in the instruction cache against the
runtime's functions is then a draw, which cost the sampled copy of 3.13
8.5x the untraced copy's instruction-cache misses on a call-heavy program
(README, "Sampled mode").  The traced copy (exact mode) is not trained:
its run would write gigabytes of trace; it is compiled as without
feedback.

Both runs take one string hash seed, one random seed (regrtest's
--randseed 0 on 3.11, SOURCE_DATE_EPOCH on 3.13) and, where setarch -R
is allowed, no address-space randomization (the default hash of an
object is its address): they take the same paths from one build to the
next, so that the counts, and the layout GCC makes of them, repeat.

Tests that fail under the sampled run (none should: EVALPROF_QUIET keeps
evalprof's notices off the children's stderr) fail the training no more
than CPython's own task does: the counts are what matters.  The script
fails if either run could not start, or if the sampled run wrote no trace
(its copy would then be untrained).

    python pgo-train.py        (as PROFILE_TASK: ./python pgo-train.py)

EVALPROF_PGO_TASK replaces the task's arguments (split as a shell would;
tests/e2e/modea/pgo.sh runs the script on a short one).
"""
import os
import shlex
import subprocess
import sys
import tempfile

# --randseed 0: 3.11's regrtest seeds the random module (and orders the
# tests) by it; 3.13's seeds it by SOURCE_DATE_EPOCH before each test
# (main()), which then keeps CPython's own order
TASK = shlex.split(os.environ.get("EVALPROF_PGO_TASK")
                   or "-m test --pgo --timeout=1200 --randseed 0")


def fixed_layout():
    """The prefix that runs a command without address-space randomization
    (util-linux's setarch -R), where the system allows it; else none.
    With it and one string hash seed, the training takes the same paths
    from one build to the next (object hashes are their addresses), so
    that its counts, and the layout GCC draws from them, repeat."""
    cmd = ["setarch", os.uname().machine, "-R"]
    try:
        ok = subprocess.run(cmd + ["true"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        ok = False
    if not ok:
        print("evalprof-pgo: setarch -R is not available here: the training "
              "runs with address-space randomization, and its layout may "
              "differ from build to build", file=sys.stderr)
    return cmd if ok else []


def main():
    with tempfile.TemporaryDirectory(prefix="evalprof-pgo-") as tmp:
        trace = os.path.join(tmp, "train.evp")
        runs = {}
        prefix = fixed_layout()
        for name, extra in (("untraced", {}),
                            ("sampled", {"EVALPROF": trace,
                                         "EVALPROF_MODE": "sample",
                                         "EVALPROF_QUIET": "1"})):
            env = dict(os.environ, PYTHONHASHSEED="0",
                       SOURCE_DATE_EPOCH="1", **extra)
            if not extra:
                for k in ("EVALPROF", "EVALPROF_MODE"):
                    env.pop(k, None)
            log = open(os.path.join(tmp, name + ".log"), "w")
            try:
                runs[name] = (subprocess.Popen(
                    prefix + [sys.executable] + TASK, env=env, stdout=log,
                    stderr=subprocess.STDOUT), log)
            except OSError as e:
                print("evalprof-pgo: cannot run the %s training: %s"
                      % (name, e), file=sys.stderr)
                for proc, _ in runs.values():
                    proc.kill()
                    proc.wait()
                return 1
        for name, (proc, log) in runs.items():
            rc = proc.wait()
            log.close()
            with open(log.name) as f:
                tail = [l.strip() for l in f if l.strip()][-1:]
            print("evalprof-pgo: %s training: exit %d (%s)"
                  % (name, rc, tail[0] if tail else "no output"))
        if not os.path.exists(trace) or os.path.getsize(trace) == 0:
            print("evalprof-pgo: the sampled training wrote no trace: the "
                  "sampled copy would be laid out without a profile",
                  file=sys.stderr)
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
