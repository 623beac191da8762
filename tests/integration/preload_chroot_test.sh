#!/usr/bin/env bash
# preload_chroot_test.sh: a daemon that chroot()s after start-up (name
# servers, mail and FTP servers do) still gets its profiles, in the
# directory the output pattern named before, for its own process and for a
# child forked inside the new root (src/preload/outdir.c). Before, every
# profile written after the chroot was lost: "No such file or directory".
# At rate 1 the counts are exact: before_chroot 300, after_chroot 500 in
# the parent; in_child 200 in the child. Needs root (chroot); skipped
# otherwise. (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/chroot_daemon
[ -x "$PROG" ] || fail "not built: $PROG"
mkdir -p "$TMP/jail" "$TMP/out"

for pattern in 'p.%p.pb.gz' 'fixed.pb.gz'; do
	rm -f "$TMP/out"/*
	st=0
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/out/$pattern" \
		"$PROG" "$TMP/jail" >"$TMP/c.out" 2>"$TMP/c.err" || st=$?
	[ $st != 77 ] || skip "chroot is not permitted here: $(cat "$TMP/c.err")"
	[ $st = 0 ] || fail "$pattern: exit status $st: $(head -3 "$TMP/c.err")"
	! grep -q "cannot write" "$TMP/c.err" || fail "$pattern: $(head -3 "$TMP/c.err")"
	pid=$(awk '$1 == "pid" { print $2 }' "$TMP/c.out")
	child=$(awk '$1 == "child" { print $2 }' "$TMP/c.out")
	if [ "$pattern" = fixed.pb.gz ]; then
		parent_file=$TMP/out/fixed.pb.gz
		child_file=$TMP/out/fixed.$child.pb.gz
	else
		parent_file=$TMP/out/p.$pid.pb.gz
		child_file=$TMP/out/p.$child.pb.gz
	fi
	[ -s "$parent_file" ] || fail "$pattern: no parent profile: $(ls "$TMP/out" "$TMP/jail")"
	[ -s "$child_file" ] || fail "$pattern: no child profile: $(ls "$TMP/out" "$TMP/jail")"
	[ -z "$(ls -A "$TMP/jail")" ] || fail "$pattern: files inside the new root: $(ls -A "$TMP/jail")"
	[ -z "$(ls "$TMP/out" | grep '\.tmp\.')" ] || fail "$pattern: temporary files left: $(ls "$TMP/out")"
	check_readable "$parent_file"
	check_readable "$child_file"
	for want in "$parent_file before_chroot 300" "$parent_file after_chroot 500" \
		"$child_file in_child 200"; do
		set -- $want
		got=$(objects_of "$1" "$2")
		[ "$got" = "$3" ] || fail "$pattern: $2 in $(basename "$1"): $got objects, want $3"
	done
done
echo "preload chroot: ok"
