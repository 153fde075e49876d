#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every long option a program's getopt table takes is in its --help: for each
# program, the options of the source files that declare its tables against
# the text of its help commands.  Needs the programs built (make).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$TOP/build}
cd "$TOP" || exit 1

# program | its sources with option tables | help commands (;-separated)
PROGRAMS=(
	"mrocd|daemon/main.c|--help"
	"mroc-sim|sim/mroc_sim.c sim/run_cli.c sim/cluster_cli.c sim/enginebench.c|--help;cluster --help;engine --help"
	"mroc-cli|cli/main.c|--help"
	"xsk-baseline|tools/xsk-baseline.c|--help"
)

missing=0 checked=0
for entry in "${PROGRAMS[@]}"; do
	IFS='|' read -r prog srcs helps <<<"$entry"
	bin=$BUILD/$prog
	[ -x "$bin" ] || { echo "$bin is not built (make)"; exit 77; }
	text=
	IFS=';' read -ra cmds <<<"$helps"
	for c in "${cmds[@]}"; do
		# shellcheck disable=SC2086
		text+=$("$bin" $c 2>&1)$'\n'
	done
	# shellcheck disable=SC2086
	for opt in $(grep -ho '{ *"[a-z0-9-]*", *[a-z_]*_argument' $srcs | sed 's/{ *"\([^"]*\)".*/\1/' | sort -u); do
		checked=$((checked + 1))
		grep -qE -- "(^|[^a-z0-9-])-{1,2}$opt([^a-z0-9-]|\$)" <<<"$text" && continue
		echo "$prog: --$opt is not in its help"
		missing=$((missing + 1))
	done
done
[ "$missing" -eq 0 ] || { echo "$missing of $checked options missing from the programs' help"; exit 1; }
echo "all $checked long options are in their programs' help"
