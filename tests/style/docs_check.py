#!/usr/bin/env python3
"""The documentation holds together: README.md stays a newcomer's page
(under 500 lines); every relative link in README.md and docs/*.md points
at a file that exists, and at a heading that exists when it names one
(GitHub's anchors); every --option that a command line in their code
blocks gives `evalprof CMD` is one that CMD's help (src/cli/help/CMD.txt)
describes, and every --option given `python -m evalprof` one its runner
(python/evalprof/_cli.py) knows; every EVALPROF_* variable they name is
read somewhere in the source.

    docs_check.py ROOT              check the tree at ROOT
    docs_check.py --selftest ROOT   prove the check catches each defect
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_README_LINES = 500
SOURCE_DIRS = ("src", "python", "cpython", "include", "tools", "bench", "tests")

LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
EVALPROF_CMD = re.compile(r"(?<![\w.-])(?:[\w./~-]*/)?evalprof\s+([a-z][a-z-]*)\b")
# What may come before a command on its line: nothing, environment
# assignments, or the end of another command (a pipe, `&&`, a wrapper's
# `--`, a command substitution).
COMMAND_START = re.compile(
    r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*$|(?:--|&&|\|\||\||;|\$\(|\()\s*"
    r"(?:[A-Z_][A-Z0-9_]*=\S*\s+)*$")
PY_RUNNER = re.compile(r"-m\s+evalprof\b")
OPTION = re.compile(r"^--[a-z][a-z0-9-]*")
ENV = re.compile(r"\bEVALPROF_[A-Z0-9_]*[A-Z0-9]\b")


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    d = os.path.join(root, "docs")
    if os.path.isdir(d):
        files += sorted(os.path.join(d, f) for f in os.listdir(d)
                        if f.endswith(".md"))
    return [f for f in files if os.path.isfile(f)]


def split_code(text):
    """(prose lines, code lines) of a Markdown text, each as (number,
    line); inline code spans are blanked out of the prose."""
    prose, code, fenced = [], [], False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            code.append((n, line))
        else:
            prose.append((n, re.sub(r"`[^`]*`", "``", line)))
    return prose, code


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        with open(path, encoding="utf-8") as f:
            prose, _ = split_code(f.read())
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for n, _ in prose:
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", lines[n - 1])
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else "%s-%d" % (s, k))
        cache[path] = out
    return cache[path]


def check_links(root, path, prose, problems):
    rel = os.path.relpath(path, root)
    for n, line in prose:
        for m in LINK.finditer(line):
            target = m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (os.path.normpath(os.path.join(os.path.dirname(path),
                                                  file_part))
                    if file_part else path)
            if not os.path.exists(dest):
                problems.append("%s:%d: link to %s: no such file"
                                % (rel, n, target))
                continue
            if anchor and dest.endswith(".md") and os.path.isfile(dest):
                if anchor not in anchors(dest):
                    problems.append("%s:%d: link to %s: %s has no heading "
                                    "with that anchor"
                                    % (rel, n, target,
                                       os.path.relpath(dest, root)))


def words_before_program(line, start):
    """The words of a command line from START up to where the program's
    own command line or the next command begins."""
    words, depth = [], 0
    for w in line[start:].split():
        bare = w.strip("`").lstrip("[(")
        if bare == "--" or (depth == 0 and (
                w in ("|", "||", "&&", ";", "<") or
                w.startswith(("#", ">", "2>")))):
            break
        depth += w.count("[") - w.count("]")
        words.append(bare.rstrip("])"))
    return words


def check_options(root, path, code, problems):
    rel = os.path.relpath(path, root)
    helpdir = os.path.join(root, "src", "cli", "help")
    runner = os.path.join(root, "python", "evalprof", "_cli.py")
    runner_text = open(runner, encoding="utf-8").read() \
        if os.path.isfile(runner) else None
    for n, raw in code:
        line = raw[2:] if raw.startswith("$ ") else raw
        for m in EVALPROF_CMD.finditer(line):
            if not COMMAND_START.search(line[:m.start()]):
                continue  # prose or program output, not a command line
            cmd = m.group(1)
            helpfile = os.path.join(helpdir, cmd + ".txt")
            if not os.path.isfile(helpfile):
                if os.path.isdir(helpdir):
                    problems.append("%s:%d: `evalprof %s`: no such command "
                                    "(no src/cli/help/%s.txt)"
                                    % (rel, n, cmd, cmd))
                continue
            helptext = open(helpfile, encoding="utf-8").read()
            for w in words_before_program(line, m.end(1)):
                o = OPTION.match(w)
                if o and not re.search(re.escape(o.group(0)) + r"(?![a-z0-9-])",
                                       helptext):
                    problems.append("%s:%d: `evalprof %s %s`: not an option "
                                    "its help (src/cli/help/%s.txt) describes"
                                    % (rel, n, cmd, o.group(0), cmd))
        r = PY_RUNNER.search(line)
        if r and runner_text is not None:
            for w in line[r.end():].split():
                if not w.startswith("-"):
                    break  # the script: the program's own arguments follow
                o = OPTION.match(w)
                if o and ('"%s"' % o.group(0)) not in runner_text:
                    problems.append("%s:%d: `python -m evalprof %s`: not an "
                                    "option of python/evalprof/_cli.py"
                                    % (rel, n, o.group(0)))


def source_text(root, cache={}):
    if root not in cache:
        parts = []
        for d in SOURCE_DIRS:
            for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
                dirnames[:] = [x for x in dirnames if x != "__pycache__"]
                for f in filenames:
                    if f == os.path.basename(__file__):
                        continue  # names variables that must not exist
                    if f.endswith((".c", ".h", ".py", ".sh", ".def", ".txt",
                                   ".build", ".in")):
                        try:
                            with open(os.path.join(dirpath, f),
                                      encoding="utf-8", errors="replace") as fh:
                                parts.append(fh.read())
                        except OSError:
                            pass
        cache[root] = "\n".join(parts)
    return cache[root]


def check_env(root, path, text, problems):
    rel = os.path.relpath(path, root)
    src = source_text(root)
    for n, line in enumerate(text.split("\n"), 1):
        for m in ENV.finditer(line):
            if not re.search(re.escape(m.group(0)) + r"(?![A-Z0-9_])", src):
                problems.append("%s:%d: %s: no such variable in the source"
                                % (rel, n, m.group(0)))


def check(root):
    problems = []
    readme = os.path.join(root, "README.md")
    with open(readme, encoding="utf-8") as f:
        lines = f.read().count("\n")
    if lines >= MAX_README_LINES:
        problems.append("README.md: %d lines, at most %d: the depth belongs "
                        "in docs/" % (lines, MAX_README_LINES - 1))
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        prose, code = split_code(text)
        check_links(root, path, prose, problems)
        check_options(root, path, code, problems)
        check_env(root, path, text, problems)
    return problems


def selftest(root):
    """Each defect planted in a copy of the documentation is reported, and
    the clean copy passes."""
    def copy(tmp):
        shutil.copy(os.path.join(root, "README.md"), tmp)
        for d in ("docs", "bench"):
            shutil.copytree(os.path.join(root, d), os.path.join(tmp, d))
        for d in ("src", "python", "cpython", "include", "tools", "tests"):
            shutil.copytree(os.path.join(root, d), os.path.join(tmp, d),
                            ignore=shutil.ignore_patterns(
                                "*.evp", "*.svg", "*.script", "corpus*",
                                "__pycache__"))

    def run(tmp):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), tmp],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def append(path, text):
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)

    cases = [
        ("a link to a missing file", "README.md",
         "\nSee [the guide](docs/NO-SUCH-PAGE.md).\n", "no such file"),
        ("a link to a missing heading", "docs/SAMPLING.md",
         "\nSee [costs](RECORDING.md#no-such-heading).\n",
         "has no heading with that anchor"),
        ("a link to a missing heading of its own page", "docs/REPORTS.md",
         "\nSee [above](#no-such-section).\n",
         "has no heading with that anchor"),
        ("an option no help describes", "docs/REPORTS.md",
         "\n```\nevalprof summary --no-such-option run.evp\n```\n",
         "`evalprof summary --no-such-option`"),
        ("an option of the runner that is not one", "README.md",
         "\n```\npython3 -m evalprof --no-such-flag script.py\n```\n",
         "`python -m evalprof --no-such-flag`"),
        ("a command that does not exist", "README.md",
         "\n```\nbuild/evalprof frobnicate run.evp\n```\n",
         "`evalprof frobnicate`: no such command"),
        ("a variable nothing reads", "docs/RECORDING.md",
         "\n`EVALPROF_NO_SUCH_KNOB=1` does nothing.\n",
         "EVALPROF_NO_SUCH_KNOB: no such variable"),
        ("a README too long to read in ten minutes", "README.md",
         "\nmore\n" * MAX_README_LINES, "lines, at most"),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        os.mkdir(clean)
        copy(clean)
        rc, out = run(clean)
        if rc != 0:
            print("the clean copy was reported:\n" + out)
            return 1
        # An option after the program's own `--`, or a script's own option
        # after `python -m evalprof SCRIPT`, is the program's: not checked.
        append(os.path.join(clean, "docs", "REPORTS.md"),
               "\n```\nevalprof record -o x.evp -- python3 prog.py --verbose\n"
               "python3 -m evalprof -o x.evp prog.py --verbose\n```\n")
        rc, out = run(clean)
        if rc != 0:
            print("the program's own options were checked:\n" + out)
            failed += 1
        for i, (what, f, text, expect) in enumerate(cases):
            d = os.path.join(tmp, "case%d" % i)
            os.mkdir(d)
            copy(d)
            append(os.path.join(d, f), text)
            rc, out = run(d)
            if rc == 0 or expect not in out:
                print("not caught: %s (exit %d):\n%s" % (what, rc, out))
                failed += 1
            else:
                print("caught: %s" % what)
    return 1 if failed else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--selftest":
        sys.exit(selftest(os.path.abspath(sys.argv[2])))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("%d problem%s in README.md and docs/"
              % (len(problems), "" if len(problems) == 1 else "s"))
        sys.exit(1)
    print("README.md and docs/: %d files, links, options and variables hold"
          % len(doc_files(root)))


if __name__ == "__main__":
    main()
