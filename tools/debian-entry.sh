# Shell functions (sourced, not run) shared by cpython/build.sh and
# tools/pythons.sh: the machine's own Debian archive entry, rewritten for
# other suites.  The archive address always comes from the machine's apt
# configuration, never from evalprof's files.
#
# EVALPROF_DEBIAN_SOURCES names another deb822 file to read instead of
# /etc/apt/sources.list.d/debian.sources (tests use it to simulate an
# archive that cannot be reached).

# debian_entry TYPE SUITES: the first entry of the deb822 file whose URIs
# name a Debian archive (.../debian), as a deb822 stanza of type TYPE
# (deb, deb-src) for SUITES (space-separated), component main, its
# Signed-By kept and its comments left out; else the first "deb" line of
# the one-line sources.list files, as such a stanza.  Prints nothing when
# the machine has no Debian entry.
debian_entry() {
    type=$1
    suites=$2
    f=${EVALPROF_DEBIAN_SOURCES:-/etc/apt/sources.list.d/debian.sources}
    if [ -r "$f" ]; then
        awk -v type="$type" -v suites="$suites" '
            BEGIN { RS = ""; ORS = "\n\n" }
            /(^|\n)URIs:[ \t]*[^ \t\n]*\/debian\/?([ \t\n]|$)/ && !done {
                n = split($0, l, "\n"); out = ""
                for (i = 1; i <= n; i++) {
                    if (l[i] ~ /^#/) continue
                    if (l[i] ~ /^Types:/) l[i] = "Types: " type
                    else if (l[i] ~ /^Suites:/) l[i] = "Suites: " suites
                    else if (l[i] ~ /^Components:/) l[i] = "Components: main"
                    out = out l[i] "\n"
                }
                printf "%s\n", out; done = 1
            }' "$f"
        return
    fi
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        uri=$(awk '$1 == "deb" && $0 !~ /security/ {
                     for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { print $i; exit } }' "$f")
        if [ -n "$uri" ]; then
            printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\n' "$type" "$uri" "$suites"
            return
        fi
    done
}
