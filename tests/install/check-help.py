#!/usr/bin/env python3
"""Every subcommand's help describes every option it accepts.

usage: check-help.py EVALPROF SRCDIR MANDIR

The commands are read from src/cli/main.c's table and each one's long
options from the getopt_long table in src/cli/cmd_NAME.c (the shared
EVP_CLI_COMMON_LONGOPTS expanded from cli.h).  For each command:
`evalprof CMD --help` and `evalprof help CMD` print the same text, exit 0,
and name every option; its man page evalprof-CMD.1 exists, names every
option and renders without warnings (`man -l` when man is installed,
else groff or nroff).  A wrong operand count and an unknown --format say
what is wrong.
"""
import os
import re
import shutil
import subprocess
import sys
import unittest

EVALPROF, SRC, MANDIR = sys.argv[1:4]
del sys.argv[1:4]


def read(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as f:
        return f.read()


def commands():
    table = re.search(r"commands\[\] = \{(.*?)\n\};", read("src/cli/main.c"),
                      re.S).group(1)
    return re.findall(r'\{"([\w-]+)", (cmd_\w+)\}', table)


def long_options(fn):
    """The long options of the getopt table in the file defining FN."""
    common = re.search(r"#define EVP_CLI_COMMON_LONGOPTS(.*?)\n\n",
                       read("src/cli/cli.h"), re.S).group(1)
    for name in sorted(os.listdir(os.path.join(SRC, "src/cli"))):
        if not name.endswith(".c"):
            continue
        text = read("src/cli/" + name)
        if not re.search(r"^int %s\(" % fn, text, re.M):
            continue
        tables = re.findall(r"struct option \w+\[\] = \{(.*?)\};", text, re.S)
        opts = []
        for t in tables:
            t = t.replace("EVP_CLI_COMMON_LONGOPTS", common)
            opts += re.findall(r'\{"([\w-]+)",', t)
        return name, opts
    raise AssertionError("no source defines %s" % fn)


def export_formats():
    """The names in cmd_export.c's formats table, in its order."""
    table = re.search(r"\} formats\[\] = \{(.*?)\n\};",
                      read("src/cli/cmd_export.c"), re.S).group(1)
    return re.findall(r'\{"([\w-]+)", export_\w+[,}]', table)


def run(*args):
    return subprocess.run([EVALPROF] + list(args), capture_output=True,
                          text=True)


def described(help_text):
    """The options the help's options section describes, each spelling."""
    section = help_text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    opts = set()
    for line in section.split("\n"):
        m = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)
        if m:
            opts.update(re.findall(r"(?:^|, )--([\w-]+)", m.group(1)))
    return opts


def mentions(text, opt):
    return re.search(r"(?<![\w-])--%s(?![\w-])" % re.escape(opt), text)


def render(page):
    """The page as a reader sees it, and the renderer's complaints."""
    env = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0")
    if shutil.which("man"):
        p = subprocess.run(["man", "-l", page], capture_output=True,
                           text=True, env=env)
    elif shutil.which("groff"):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", page],
                           capture_output=True, text=True)
    else:
        p = subprocess.run(["nroff", "-man", page], capture_output=True,
                           text=True)
    text = re.sub(r".\x08", "", p.stdout)
    return p.returncode, text.replace("\u2010", "-").replace("\u2212", "-"), \
        p.stderr


class Help(unittest.TestCase):
    def test_every_command_describes_every_option(self):
        cmds = commands()
        self.assertGreaterEqual(len(cmds), 9)
        for name, fn in cmds:
            src, opts = long_options(fn)
            self.assertIn("help", opts, src)
            p = run(name, "--help")
            self.assertEqual(p.returncode, 0, (name, p.stderr))
            self.assertEqual(p.stderr, "")
            self.assertTrue(p.stdout.startswith("usage: evalprof " + name),
                            p.stdout[:80])
            q = run("help", name)
            self.assertEqual((q.returncode, q.stdout), (0, p.stdout), name)
            self.assertIn("\noptions:\n", p.stdout)
            have = described(p.stdout)
            for opt in opts:
                self.assertIn(opt, have, "%s --help does not describe --%s "
                              "(accepted by %s)" % (name, opt, src))
            self.assertIn("\nexamples:\n", p.stdout)

    def test_every_format_is_described(self):
        """export's formats table and tree's --format values are the help's
        choices (which the completion offers too)."""
        names = export_formats()
        self.assertIn("text", names)
        for cmd, values in (("export", names),
                            ("tree", ["simple-indent", "simple", "raw"])):
            spec = re.search(r"^  -f, --format (\S+)", run(cmd, "--help").stdout,
                             re.M)
            self.assertIsNotNone(spec, cmd)
            self.assertEqual(sorted(spec.group(1).split("|")), sorted(values),
                             "%s --help: --format %s" % (cmd, spec.group(1)))

    def test_top_level_lists_every_command(self):
        p = run("help")
        self.assertEqual(p.returncode, 0, p.stderr)
        for name, _ in commands():
            self.assertRegex(p.stdout, r"\n  %s +\S" % name)
        self.assertEqual(run("--help").stdout, p.stdout)
        q = run("help", "nosuch")
        self.assertEqual(q.returncode, 2)
        self.assertIn("no such command 'nosuch'", q.stderr)

    def test_man_pages(self):
        pages = ["evalprof"] + ["evalprof-" + n for n, _ in commands()]
        for page in pages:
            path = os.path.join(MANDIR, page + ".1")
            self.assertTrue(os.path.exists(path), path)
            rc, text, err = render(path)
            self.assertEqual(rc, 0, err)
            self.assertEqual(err.strip(), "", page)
            self.assertIn("NAME", text)
            self.assertIn(page + " - ", text)
            if page == "evalprof":
                for name, _ in commands():
                    self.assertIn("evalprof " + name, text)
                continue
            self.assertIn("SYNOPSIS", text)
            self.assertIn("OPTIONS", text)
            _, opts = long_options(dict(commands())[page[len("evalprof-"):]])
            for opt in opts:
                self.assertTrue(mentions(text, opt),
                                "%s.1 does not describe --%s" % (page, opt))

    def test_operand_count_is_named(self):
        cases = [(["summary"], "summary: expected one TRACE or more, got none"),
                 (["tree"], "tree: expected one TRACE, got none"),
                 (["info", "a", "b", "c"], "info: expected one TRACE, got 3"),
                 (["diff", "a"],
                  "diff: expected two traces, BASE and NEW, got 1"),
                 (["import"], "import: expected one TEXT-TRACE, got none"),
                 (["export", "--format", "text"],
                  "export: expected one TRACE, got none"),
                 (["flamegraph", "a", "b"],
                  "flamegraph: expected one TRACE or FOLDED file, got 2"),
                 (["flamegraph", "--diff", "a"],
                  "flamegraph: expected BASE and NEW (each a TRACE or FOLDED "
                  "file), got 1"),
                 (["report"],
                  "report: expected one TRACE, or BASE and NEW, got none"),
                 (["report", "a", "b", "c"],
                  "report: expected one TRACE, or BASE and NEW, got 3")]
        for args, want in cases:
            p = run(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("usage: evalprof " + args[0], p.stderr)
            self.assertIn("evalprof: " + want + "\n", p.stderr)

    def test_unknown_format_lists_the_valid_ones(self):
        p = run("export", "--format", "nosuch", "x.evp")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "evalprof: export: unknown format 'nosuch' "
                         "(%s)\n" % ", ".join(export_formats()))
        p = run("export", "x.evp")
        self.assertIn("--format is required (text, evp, folded", p.stderr)
        p = run("tree", "--format", "nosuch", "x.evp")
        self.assertIn("(simple-indent, simple, raw)", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
