# cli_expect.sh: sourced by integration tests (not a test itself) for the
# rule every allocprof command keeps on failure: the documented exit status,
# exactly one line on stderr starting "allocprof", nothing on stdout.
#
#   expect_status STATUS CMD [ARGS...]
#
# runs CMD with its output kept in $EXPECT_DIR/out and $EXPECT_DIR/err (so a
# caller can check the message further) and calls the script's fail()
# unless CMD exited STATUS and, for a non-zero STATUS, the rule above holds.
# Requires fail() to be defined; EXPECT_DIR defaults to a new temporary
# directory removed at exit only if the script sets no EXIT trap of its own,
# so scripts normally point it into their own scratch directory.
: "${EXPECT_DIR:=$(mktemp -d "${TMPDIR:-/tmp}/ap_expect.XXXXXX")}"

expect_status() {
	local want=$1 st=0
	shift
	"$@" > "$EXPECT_DIR/out" 2> "$EXPECT_DIR/err" || st=$?
	[ "$st" = "$want" ] ||
		fail "'$*' exited $st, want $want; stderr: $(cat "$EXPECT_DIR/err")"
	[ "$want" = 0 ] && return 0
	[ "$(wc -l < "$EXPECT_DIR/err")" = 1 ] ||
		fail "'$*': stderr is not one line: $(cat "$EXPECT_DIR/err")"
	grep -q '^allocprof' "$EXPECT_DIR/err" ||
		fail "'$*': message lacks the allocprof prefix: $(cat "$EXPECT_DIR/err")"
	[ ! -s "$EXPECT_DIR/out" ] || fail "'$*': printed to stdout on error"
}
