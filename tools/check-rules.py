#!/usr/bin/env python3
"""Check the rules docs/HACKING.md states for the libraries, beside the
layer order (tools/check-layers.py, which also holds the files of a
directory to calls that run one way).

    tools/check-rules.py [ROOT]

  quiet       The libraries print nothing: no file of src/util, src/format,
              src/trace, src/views or src/perf writes to stderr or stdout
              (a library returns a negative errno and a one-line message,
              and the command prints it).
  no-state    No hidden state in trace, views and perf: a variable of file scope,
              or one declared static inside a function, is const (sort
              comparators take their context through qsort_r).
  no-stack    Views keep no stack of frames: the replay engine keeps it and
              resolves each sample's stack (no file of src/views names the
              stack table, evp_trace_stack, or grows an array called a
              stack, a path or frames).

Prints one line per violation and exits 1 when there is any; prints a
one-line summary and exits 0 otherwise.
"""
import os
import re
import sys

LIBRARIES = ["src/util", "src/format", "src/trace", "src/views", "src/perf"]
# (src/util's SIGBUS guard is process-wide by nature, a signal handler;
# src/format's evp_kind_name names an unknown kind in a thread's buffer)
STATELESS = ["src/trace", "src/views", "src/perf"]
VIEWS = "src/views"

PRINTS = re.compile(r"\b(stderr|perror|printf|puts|putchar|vprintf)\b")
GROWN = re.compile(r"evp_grow\s*\(\s*\(void\s*\*\*\)\s*&\s*([\w.>-]+)")
STACKY = re.compile(r"(stack|frames)\w*$")


def strip(text):
    """TEXT with comments, strings and character constants blanked (their
    newlines kept, so that line numbers still count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) +
                       (c if j - 1 > i else ""))
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            # a preprocessor line, continuations included
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            line = text[i:k]
            keep = line.startswith("#define")
            out.append(line if keep else " " * len(line))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


def top_level(code):
    """(start, text, end) of each declaration at file scope: a function's
    head (END "{", its body left out) or a declaration up to its ';' (END
    ";", a struct's body and an initialiser kept in TEXT)."""
    decls, i, start, n = [], 0, 0, len(code)
    while i < n:
        c = code[i]
        if c == ";":
            decls.append((start, code[start:i], ";"))
            start = i + 1
        elif c == "{":
            head = code[start:i].rstrip()
            j, depth = i, 0
            while j < n:
                if code[j] == "{":
                    depth += 1
                elif code[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if head.endswith(")") and "=" not in head:
                decls.append((start, code[start:i], "{"))
                start = j + 1
            i = j
        i += 1
    return decls


def line_of(code, pos):
    return code.count("\n", 0, pos) + 1


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8",
              errors="replace") as f:
        return strip(f.read())


def c_files(root, d):
    full = os.path.join(root, d)
    if not os.path.isdir(full):
        return []
    return sorted(os.path.join(d, n) for n in os.listdir(full)
                  if n.endswith(".c"))


def check_quiet(root, d, problems):
    for f in c_files(root, d):
        code = read(root, f)
        for m in PRINTS.finditer(code):
            problems.append("quiet: %s:%d: a library names %s: it returns "
                            "a negative errno and a message, the command "
                            "prints" % (f, line_of(code, m.start()),
                                        m.group(1)))


def check_state(root, d, problems):
    for f in c_files(root, d):
        code = read(root, f)
        for start, text, _ in top_level(code):
            t = re.sub(r"\{[^{}]*\}", " ", text.strip())
            while re.search(r"\{[^{}]*\}", t):
                t = re.sub(r"\{[^{}]*\}", " ", t)
            if not t or t.startswith("#") or "(" in t.split("=")[0]:
                continue  # functions, prototypes, macros
            words = t.split("=")[0].split()
            if words[0] in ("typedef", "struct", "enum", "union") and \
                    len(words) <= 2 and "=" not in t:
                continue  # type declarations
            if words[0] in ("extern", "typedef") or "const" in words:
                continue
            pos = start + len(text) - len(text.lstrip())
            problems.append("no-state: %s:%d: '%s' is state of file scope "
                            "that is not const" %
                            (f, line_of(code, pos), " ".join(words)[:60]))
        for m in re.finditer(r"[{;}]\s*static\s+([^;={(]*)", code):
            decl = m.group(1)
            if "const" in decl.split() or not inside_function(code,
                                                              m.start(1)):
                continue
            problems.append("no-state: %s:%d: 'static %s' inside a function "
                            "is hidden state (make it const, or the "
                            "caller's)" % (f, line_of(code, m.start() + 1),
                                           decl.strip()[:50]))


def inside_function(code, pos):
    """Whether POS is inside braces (a function's body: file-scope
    initialisers hold no "static")."""
    return code.count("{", 0, pos) > code.count("}", 0, pos)


def check_stack(root, d, problems):
    for f in c_files(root, d):
        code = read(root, f)
        for m in re.finditer(r"\bevp_trace_stack\b", code):
            problems.append("no-stack: %s:%d: a view walks the stack table "
                            "itself (the replay engine hands each sample its "
                            "frames)" % (f, line_of(code, m.start())))
        for m in GROWN.finditer(code):
            name = re.split(r"\.|->", m.group(1))[-1]
            if STACKY.search(name):
                problems.append("no-stack: %s:%d: a view grows '%s', a stack "
                                "of its own (the replay engine keeps the "
                                "frames, evp_ctree_walk the tree's path)" %
                                (f, line_of(code, m.start()), name))


def check(root):
    problems = []
    for d in LIBRARIES:
        check_quiet(root, d, problems)
    for d in STATELESS:
        check_state(root, d, problems)
    check_stack(root, VIEWS, problems)
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("%d rule violation(s)" % len(problems))
        return 1
    print("rules: quiet libraries (%s), no hidden state (%s), views keep "
          "no stack: ok" % (", ".join(LIBRARIES), ", ".join(STATELESS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
