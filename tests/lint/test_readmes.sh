#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every source file (*.c, *.h, *.sh, *.lua, *.py, *.map, *.in, executables) has a line in its folder's
# README.md: by its name, or its stem as `x.{h,c}`, `x.{c,h}` or `x.[ch]`.  Folders
# without a README (tests/unit: tests/README.md covers it by pattern) are not checked.
# Runs from the source tree, needs nothing but git and grep.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout"; exit 77; }

missing=0
while read -r readme; do
	dir=$(dirname "$readme")
	[ "$dir" = . ] && continue
	while read -r f; do
		b=${f##*/}
		stem=${b%.*}
		case $b in
		*.c|*.h|*.sh|*.lua|*.py|*.map|*.in) ;;
		*.*) continue ;;
		*) [ -x "$f" ] || continue ;;	# a script or program without a suffix
		esac
		grep -qF -e "$b" -e "$stem.{h,c}" -e "$stem.{c,h}" -e "$stem.[ch]" "$readme" && continue
		echo "$readme: no line for $b"
		missing=$((missing + 1))
	# Files in the folder itself, as git (and the work tree) has them.
	done < <({ git ls-files -- "$dir"; git ls-files --others --exclude-standard -- "$dir"; } |
		 awk -F/ -v n="$(awk -F/ '{ print NF }' <<<"$dir")" 'NF == n + 1' | sort -u)
done < <(git ls-files --cached --others --exclude-standard -- '*README.md' | sort -u)

[ "$missing" -eq 0 ] || { echo "$missing source files missing from their folder's README"; exit 1; }
echo "every source file has a line in its folder's README"
