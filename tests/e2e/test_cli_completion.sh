#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mroc-cli's bash completion (cli/bash-completion/mroc-cli) under bash-completion:
# options, objects, each object's commands, capture's arguments, files after -b;
# QP numbers come from a fake mroc-cli (no daemon needed).
set -u
. "$(dirname "$0")/lib.sh"

BC=/usr/share/bash-completion/bash_completion
[ -r "$BC" ] || skip "needs bash-completion (scripts/deps.sh installs it)"
# shellcheck disable=SC1090
. "$BC"
# shellcheck disable=SC1091
. "$E2E_TOP/cli/bash-completion/mroc-cli"
WORK=$(mktemp -d /tmp/mroc-compl.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || fail "cd"

# complete LINE: the sorted candidates for the last word of LINE (a trailing space: a new word).
complete_line() {
	local line=$1
	read -r -a COMP_WORDS <<<"$line"
	[ "${line: -1}" = " " ] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMPREPLY=()
	_mroc_cli mroc-cli "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	[ ${#COMPREPLY[@]} -gt 0 ] && printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
expect() {
	local got
	got=$(complete_line "$1")
	[ "$got" = "$2" ] || fail "completing \"$1\": \"$got\", expected \"$2\""
}

expect "mroc-cli " "capture config counters help link path qp status watch "
expect "mroc-cli c" "capture config counters "
expect "mroc-cli -j -s p" "path "
expect "mroc-cli -b" "-b -batch -br -brief "
expect "mroc-cli -det" "-details "
expect "mroc-cli counters " "help prometheus reset show "
expect "mroc-cli c " "help prometheus reset show "
expect "mroc-cli p " "help show "
expect "mroc-cli p s " "help qp "
expect "mroc-cli status show " ""
expect "mroc-cli capture " "count dev dry duration help snaplen write "
expect "mroc-cli cap dev l" "lo "
expect "mroc-cli watch " "counters link path qp status "
expect "mroc-cli help q" "qp "
touch batch.txt
expect "mroc-cli -b bat" "batch.txt "
# QP numbers: from the mroc-cli being completed (here a fake printing a qp table).
cat >fake-cli <<'FAKE'
#!/bin/sh
printf '  QPN  PEER\n   17  10.0.0.2\n65538  10.0.0.3\n'
FAKE
chmod +x fake-cli
COMP_WORDS=(./fake-cli path show qp "")
COMP_CWORD=4 COMP_LINE="./fake-cli path show qp " COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_mroc_cli ./fake-cli "" qp
[ "$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')" = "17 65538 " ] ||
	fail "QP numbers after \"path show qp\": ${COMPREPLY[*]}"
ok "bash completion: options, objects (aliases resolved), commands, capture's words, files, QP numbers"
echo "1 passed, 0 failed"
