#!/usr/bin/env python3
"""Turn evalprof's help sources (src/cli/help/*.txt) into what the tool
ships: the C table that `evalprof CMD --help` prints, the man pages and
the bash completion script, so that the three never disagree.

usage: gen-help.py c OUT.h VERSION HELP.txt...
       gen-help.py man OUTDIR VERSION HELP.txt...
       gen-help.py bash OUT VERSION HELP.txt...

A help source reads:

    NAME - one-line summary
    (blank line)
    SYNOPSIS
    evalprof NAME [--option VALUE] TRACE
                  [continuation lines keep their indent]
    DESCRIPTION
    Paragraphs, blank-line separated and refilled.  A line indented by
    two spaces or more is kept as it is (lists, commands).
    OPTIONS
    -o, --output FILE
        What it does (default: ...).  Indented four spaces, refilled.
    EXAMPLES
    evalprof NAME run.evp
        What it shows.
    SEE ALSO
    evalprof-tree(1), evalprof-summary(1)

Section headings are lines in capitals alone.  evalprof.txt is the
command's own page (no SYNOPSIS options); its COMMANDS list is made from
the other files' summaries.  Option specs give the long and short
spellings before the value (`--format text|evp`): a value with '|' lists
the choices, which the completion offers.
"""
import os
import re
import sys
import textwrap

HEADING = re.compile(r"^[A-Z][A-Z ]*$")
WIDTH = 79


class Help:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        first = lines[0] if lines else ""
        if " - " not in first:
            sys.exit("gen-help: %s:1: expected 'NAME - summary'" % path)
        self.name, self.summary = (s.strip() for s in first.split(" - ", 1))
        self.sections = {}
        self.order = []
        cur = None
        for n, line in enumerate(lines[1:], 2):
            if HEADING.match(line):
                cur = line
                self.order.append(cur)
                self.sections[cur] = []
            elif cur is None:
                if line.strip():
                    sys.exit("gen-help: %s:%d: text before a section" % (path, n))
            else:
                self.sections[cur].append(line.rstrip())
        for s in self.sections:
            body = self.sections[s]
            while body and not body[-1]:
                body.pop()
            while body and not body[0]:
                body.pop(0)
        self.synopsis = self.sections.get("SYNOPSIS", [])
        self.options = self.items("OPTIONS")
        self.examples = self.items("EXAMPLES")

    def items(self, section):
        """[(head, [description paragraphs])] of an OPTIONS-like section."""
        out = []
        for line in self.sections.get(section, []):
            if line and not line.startswith(" "):
                out.append((line, [[]]))
            elif not out:
                continue
            elif not line.strip():
                out[-1][1].append([])
            else:
                out[-1][1][-1].append(line.strip())
        return [(h, [" ".join(p) for p in ps if p]) for h, ps in out]

    def option_words(self):
        """Each option spelling, and its choices when the value lists them."""
        words = []
        for head, _ in self.options:
            for part in head.split(", "):
                bits = part.split(None, 1)
                if not bits or not bits[0].startswith("-"):
                    continue
                opt = re.sub(r"\[=.*", "", bits[0])
                choices = []
                if len(bits) > 1 and "|" in bits[1]:
                    choices = bits[1].split("|")
                words.append((opt, choices))
        return words


def paragraphs(body):
    """[(verbatim, [lines])] blocks of a DESCRIPTION-like section."""
    blocks = []
    for line in body:
        if not line.strip():
            blocks.append(None)
            continue
        verbatim = line.startswith("  ")
        if blocks and blocks[-1] is not None and blocks[-1][0] == verbatim:
            blocks[-1][1].append(line)
        else:
            blocks.append((verbatim, [line]))
    return [b for b in blocks if b is not None]


def text_block(body, indent=""):
    out = []
    for verbatim, lines in paragraphs(body):
        if out:
            out.append("")
        if verbatim:
            out.extend(indent + l for l in lines)
        else:
            out.extend(textwrap.wrap(" ".join(l.strip() for l in lines), WIDTH,
                                     initial_indent=indent,
                                     subsequent_indent=indent,
                                     break_on_hyphens=False))
    return out


def terminal(h, all_helps):
    """The text `evalprof NAME --help` prints."""
    out = usage(h).rstrip("\n").split("\n")
    for sec in h.order:
        if sec in ("SYNOPSIS", "SEE ALSO"):
            continue
        out.append("")
        if sec != "DESCRIPTION":
            out.append(sec.lower() + ":")
        if sec == "COMMANDS":
            for o in all_helps:
                out.append("  %-12s %s" % (o.name, o.summary))
            if h.sections[sec]:
                out.append("")
                out.extend(text_block(h.sections[sec]))
        elif sec in ("OPTIONS", "EXAMPLES"):
            for head, paras in h.items(sec):
                text = " ".join(paras)
                if sec == "OPTIONS" and len(head) <= 18:
                    lines = textwrap.wrap(text, WIDTH - 23,
                                          break_on_hyphens=False) or [""]
                    out.append("  %-19s %s" % (head, lines[0]))
                    out.extend(" " * 22 + l for l in lines[1:])
                else:
                    pad = " " * (22 if sec == "OPTIONS" else 6)
                    out.append("  " + head)
                    out.extend(textwrap.wrap(text, WIDTH, initial_indent=pad,
                                             subsequent_indent=pad,
                                             break_on_hyphens=False))
        else:
            out.extend(text_block(h.sections[sec]))
    return "\n".join(out) + "\n"


def usage(h):
    """The synopsis, as printed after a usage error."""
    lines = h.synopsis or ["evalprof %s" % h.name]
    return "".join(("usage: " if i == 0 else "       ") + l + "\n"
                   for i, l in enumerate(lines))


def c_string(s):
    out = []
    for line in s.splitlines(True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.append('    "%s"' % esc)
    return "\n".join(out) if out else '    ""'


def write_c(dst, version, helps):
    top, cmds = helps[0], helps[1:]
    out = ["/* generated from src/cli/help by tools/gen-help.py: "
           "do not edit */",
           "static const struct evp_help evp_help_texts[] = {"]
    for h in helps:
        out.append("    {%s, %s,\n%s,\n%s}," % (
            c_string(h.name).strip(), c_string(h.summary).strip(),
            c_string(usage(h)), c_string(terminal(h, cmds))))
    out.append("};")
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def roff(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    s = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", s)
    if s[:1] in (".", "'"):
        s = "\\&" + s
    return s


def roff_spec(head):
    """-o, --output FILE: options bold, values italic."""
    parts = []
    for word in re.split(r"(\s+|,\s*|\[|\]|=|\|)", head):
        if not word:
            continue
        if word.startswith("-") and len(word) > 1:
            parts.append("\\fB%s\\fR" % roff(word))
        elif re.match(r"^[A-Z][A-Z0-9.\-]*$", word):
            parts.append("\\fI%s\\fR" % roff(word))
        else:
            parts.append(roff(word))
    return "".join(parts)


def write_man(h, cmds, outdir, version):
    page = "evalprof" if h.name == "evalprof" else "evalprof-" + h.name
    # HY 0: no hyphenation, which would cut option and file names
    out = ['.\\" generated from src/cli/help/%s.txt by tools/gen-help.py'
           % h.name, ".nr HY 0",
           '.TH %s 1 "" "evalprof %s" "evalprof manual"'
           % (page.upper().replace("-", "\\-"), version),
           ".SH NAME", "%s \\- %s" % (roff(page), roff(h.summary))]
    for sec in h.order:
        out.append(".SH " + sec)
        if sec == "SYNOPSIS":
            out.append(".nf")
            out.extend(roff(l) for l in h.synopsis)
            out.append(".fi")
        elif sec == "COMMANDS":
            for o in cmds:
                out += [".TP", "\\fBevalprof %s\\fR" % roff(o.name),
                        roff(o.summary) + " (\\fBevalprof\\-%s\\fR(1))"
                        % roff(o.name)]
            out.extend(man_body(h.sections[sec]))
        elif sec in ("OPTIONS", "EXAMPLES"):
            for head, paras in h.items(sec):
                out += [".TP", roff_spec(head) if sec == "OPTIONS"
                        else "\\fB%s\\fR" % roff(head)]
                for i, p in enumerate(paras):
                    if i:
                        out.append(".IP")
                    out.append(roff(p))
        elif sec == "SEE ALSO":
            refs = ", ".join(" ".join(h.sections[sec]).split(","))
            out.append(re.sub(r"([\w\\-]+)\((\d)\)", r"\\fB\1\\fR(\2)",
                              roff(" ".join(refs.split()))))
        else:
            out.extend(man_body(h.sections[sec]))
    with open(os.path.join(outdir, page + ".1"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def man_body(body):
    out = []
    for verbatim, lines in paragraphs(body):
        out.append(".PP")
        if verbatim:
            out += [".nf", ".RS 4"] + [roff(l.strip()) for l in lines] + \
                   [".RE", ".fi"]
        else:
            out.append(roff(" ".join(l.strip() for l in lines)))
    return out


def write_bash(dst, helps):
    cmds = helps[1:]
    out = ["# bash completion for evalprof",
           "# generated from src/cli/help/*.txt by tools/gen-help.py: do not edit",
           "_evalprof()",
           "{",
           "    local cur prev cmd i opts",
           "    COMPREPLY=()",
           '    cur="${COMP_WORDS[COMP_CWORD]}"',
           '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then",
           "        COMPREPLY=($(compgen -W \"%s help --help --version\" -- \"$cur\"))"
           % " ".join(h.name for h in cmds),
           "        return 0",
           "    fi",
           '    cmd="${COMP_WORDS[1]}"',
           "    if [ \"$cmd\" = help ]; then",
           "        COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))"
           % " ".join(h.name for h in cmds),
           "        return 0",
           "    fi",
           "    # after `--` the words are the profiled command's own",
           "    for ((i = 2; i < COMP_CWORD; i++)); do",
           "        if [ \"${COMP_WORDS[i]}\" = -- ]; then",
           "            COMPREPLY=($(compgen -c -f -- \"$cur\"))",
           "            return 0",
           "        fi",
           "    done",
           '    case "$cmd" in']
    for h in cmds:
        words = h.option_words()
        choices = [(o, c) for o, c in words if c]
        if choices:
            out.append("    %s)" % h.name)
            out.append('        case "$prev" in')
            for o, c in choices:
                out.append("        %s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))"
                           "; return 0 ;;" % (o, " ".join(c)))
            out.append("        esac")
            out.append("        ;;")
    out += ["    esac",
            '    case "$cmd" in']
    for h in cmds:
        out.append("    %s) opts=\"%s\" ;;"
                   % (h.name, " ".join(o for o, _ in h.option_words())))
    out += ["    *) return 0 ;;",
            "    esac",
            '    if [[ "$cur" == -* ]]; then',
            '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
            "    else",
            '        COMPREPLY=($(compgen -f -- "$cur"))',
            "    fi",
            "    return 0",
            "}",
            "complete -o filenames -o bashdefault -F _evalprof evalprof"]
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def main(argv):
    if len(argv) < 5 or argv[1] not in ("c", "man", "bash"):
        sys.exit(__doc__.split("\n\n")[1])
    mode, dst, version, paths = argv[1], argv[2], argv[3], argv[4:]
    helps = [Help(p) for p in paths]
    if helps[0].name != "evalprof":
        sys.exit("gen-help: the first help source must be evalprof.txt")
    for h in helps:
        if os.path.basename(paths[helps.index(h)]) != h.name + ".txt":
            sys.exit("gen-help: %s names '%s'" % (paths[helps.index(h)], h.name))
    if mode == "c":
        write_c(dst, version, helps)
    elif mode == "man":
        for h in helps:
            write_man(h, helps[1:], dst, version)
    else:
        write_bash(dst, helps)


if __name__ == "__main__":
    main(sys.argv)
