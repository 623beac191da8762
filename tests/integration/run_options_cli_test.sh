#!/usr/bin/env bash
# run_options_cli_test.sh: `allocprof run` and the runtime agree on options
# (AP_TEST_PRELOAD: compares against the runtime itself).
#  - A key or value the runtime rejects stops `run` before the program
#    starts, with a non-zero status and the runtime's own line, word for
#    word, whether it came with -e, as a flag or in ALLOCPROF_OPTIONS: run
#    checks with the runtime's option table, not a parser of its own.
#  - The default output pattern is the runtime's: the man page and `run
#    --help` both name it, and `run` without -o writes a file of that form.
. "$(dirname "$0")/preload_smoke_test.sh"
. "$(dirname "$0")/cli_expect.sh"
EXPECT_DIR=$TMP
P=$AP_PROGDIR

# runtime_line OPTIONS: the runtime's complaint about OPTIONS.
runtime_line() {
	LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="$1,output=$TMP/rt.%p.pb.gz" \
		"$P/exit_status" exit 0 2> "$TMP/rt.err" > /dev/null ||
		fail "runtime with '$1': the program failed"
	[ "$(wc -l < "$TMP/rt.err")" = 1 ] ||
		fail "runtime with '$1': want one line, got: $(cat "$TMP/rt.err")"
	cat "$TMP/rt.err"
}

# refused HOW OPTION: run refuses OPTION given HOW (-e, env) like the runtime.
refused() {
	local want started=$TMP/started
	want=$(runtime_line "$2")
	rm -f "$started"
	case $1 in
	-e) expect_status 1 "$CLI" run -e "$2" -- touch "$started" ;;
	env) ALLOCPROF_OPTIONS=$2 expect_status 1 "$CLI" run -- touch "$started" ;;
	esac
	[ ! -e "$started" ] || fail "run $1 '$2': the program ran"
	[ "$(cat "$EXPECT_DIR/err")" = "$want" ] ||
		fail "run $1 '$2': said '$(cat "$EXPECT_DIR/err")', the runtime '$want'"
}
for opt in rat=100 rate=abc rate=0 rate=12x format=xml max_depth=-3 \
	   max_depth=100000 unwinder=magic fork=maybe signal=KILL \
	   interval=soon http=nowhere peak=perhaps; do
	refused -e "$opt"
	refused env "$opt"
done
refused env seed # a key without a value: only ALLOCPROF_OPTIONS can say it
# The flags go through the same table.
want=$(runtime_line rate=0)
expect_status 1 "$CLI" run -r 0 -- true
[ "$(cat "$EXPECT_DIR/err")" = "$want" ] || fail "run -r 0: $(cat "$EXPECT_DIR/err")"
want=$(runtime_line format=svg)
expect_status 1 "$CLI" run --format svg -- true
[ "$(cat "$EXPECT_DIR/err")" = "$want" ] || fail "run --format svg: $(cat "$EXPECT_DIR/err")"
# Good options still pass, the suffixes the runtime knows included.
expect_status 0 "$CLI" run -q -r 64k -e max_depth=8 -e unwinder=fp -e http=off \
	-o "$TMP/ok.%p.pb.gz" -- true

# The default output pattern: the man page, run --help, the runtime.
man_default=$(sed -n '/^\.BR \\-o ", " \\-\\-output " \\fIPATTERN\\fR"/,/^\.TP/p' \
	"$AP_SRCDIR/docs/allocprof.1" | sed -n 's/^\.BR \(allocprof\.[^ ,]*\) ,$/\1/p')
help_default=$("$CLI" run --help | tr -s ' \n' ' ' |
	sed -n 's/.*(default \(allocprof\.[^ ,]*\),.*/\1/p')
[ -n "$man_default" ] || fail "no default output pattern found in the man page"
[ -n "$help_default" ] || fail "no default output pattern found in run --help"
[ "$man_default" = "$help_default" ] ||
	fail "man page says $man_default, run --help says $help_default"
# The runtime's own default (no output= given) and run's agree with them.
mkdir "$TMP/rt" "$TMP/run"
(cd "$TMP/rt" && LD_PRELOAD=$LIB "$P/exit_status" exit 0)
(cd "$TMP/run" && "$CLI" run -q -- "$P/exit_status" exit 0)
re=$(printf '%s' "$man_default" | sed 's/\./\\./g; s/%p/[0-9][0-9]*/; s/%n/[0-9][0-9]*/')
for d in rt run; do
	f=$(ls "$TMP/$d")
	[ "$(echo "$f" | wc -l)" = 1 ] || fail "$d: want one profile, got: $f"
	echo "$f" | grep -qx "$re" || fail "$d wrote '$f', not of the form $man_default"
done
echo "run options: ok"
