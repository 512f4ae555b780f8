#!/bin/sh
# man.sh: checks that the man page (BUILD/gmatch.1, from docs/gmatch.1.in)
# and "gmatch --help" agree.
#
# The man page is written by hand and kept in sync with --help (usage() in
# src/cli/options.c), so an option added to or removed from one side only is a bug.
# This test compares the long (--xxx) and short (-x) options of the option
# lines of --help with those of the .TP tag lines in the man page's OPTIONS
# section, and the version in the man page's .TH line with --version.
#
# usage: tests/cli/man.sh GMATCH_BINARY MANPAGE
# Exit status: 0 when they agree; 1 with one line per problem otherwise.
set -f # the option lists are split on blanks below: no globbing

[ $# -eq 2 ] || { echo "usage: man.sh GMATCH_BINARY MANPAGE" >&2; exit 2; }
bin=$1 man=$2
[ -r "$man" ] || { echo "man.sh: $man: cannot read" >&2; exit 1; }

# The words of stdin that are options (-x or --xxx), sorted, on one line.
options() {
    tr -cs '[:alnum:]-' '[\n*]' |
        grep -E '^(-[[:alnum:]]|--[[:alnum:]][[:alnum:]-]*)$' | sort -u | tr '\n' ' '
}

# --help: the lines that start with blanks and a dash, cut at the first run
# of two blanks (the description column).
help=$("$bin" --help) || { echo "man.sh: $bin --help failed"; exit 1; }
help_opts=$(printf '%s\n' "$help" | grep -E '^[[:blank:]]+-' |
    sed -E 's/^[[:blank:]]+//; s/[[:blank:]]{2,}.*//' | options)

# The man page: the tag line after each .TP inside .SH OPTIONS, with the
# roff escapes undone (fonts \fB \fI \fR \f(XX \f[X]; dashes \- \(hy \(mi;
# \& \% \:), the macro name (.B, .BR, .BI, ...) and the quotes dropped.
man_opts=$(awk '/^\.SH/ { in_opts = ($2 == "OPTIONS") }
              in_opts && tag { print }
              { tag = in_opts && /^\.TP/ }' "$man" |
    sed -E 's/\\f(\[[^]]*\]|\(..|.)//g; s/\\(-|\(hy|\(mi)/-/g; s/\\[&%:]//g
            s/^\.[[:alpha:]]+//; s/"//g' |
    options)

status=0
problem() { echo "man.sh: $*"; status=1; }

[ -n "$help_opts" ] || problem "no options found in $bin --help"
[ -n "$man_opts" ] || problem "no options found in the OPTIONS section of $man"
for o in $help_opts; do
    case " $man_opts " in *" $o "*) ;; *) problem "$o: in --help, missing from $man" ;; esac
done
for o in $man_opts; do
    case " $help_opts " in *" $o "*) ;; *) problem "$o: in $man, missing from --help" ;; esac
done

# The version: the first dotted number in "gmatch --version" and in .TH.
version='[0-9]+\.[0-9]+(\.[0-9]+)*'
v_bin=$("$bin" --version | grep -oE "$version" | head -n 1)
v_man=$(grep -E '^\.TH[[:blank:]]' "$man" | grep -oE "$version" | head -n 1)
[ -n "$v_bin" ] || problem "no version in $bin --version"
[ -n "$v_man" ] || problem "no version in the .TH line of $man"
[ "$v_bin" = "$v_man" ] || problem "version: $v_bin in --version, $v_man in $man"

exit $status
