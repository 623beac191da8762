#!/usr/bin/env bash
# preload_options_test.sh: a bad ALLOCPROF_OPTIONS value or an unwritable
# output directory costs the host program nothing: its output and exit
# status are unchanged, the runtime says what is wrong in one line per
# problem on stderr, naming the key. Also: max_depth caps stacks.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

P=$AP_PROGDIR
cd "$TMP" || exit 1

# bad_options NAME OPTIONS KEY: one stderr line naming KEY, nothing else.
bad_options() {
	local name=$1 opts=$2 key=$3
	same_run "$name" 60 LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="$opts" \
		-- "$P/exit_status" exit 5
	local lines
	lines=$(grep -c . "$TMP/$name.prof.err" || true)
	[ "$lines" = 1 ] ||
		fail "$name: want one line on stderr, got $lines: $(head -5 "$TMP/$name.prof.err")"
	grep -q -- "$key" "$TMP/$name.prof.err" ||
		fail "$name: message does not name '$key': $(cat "$TMP/$name.prof.err")"
}

bad_options unknown_key "output=$TMP/u.%p.pb.gz,rat=100" rat
bad_options bad_rate "output=$TMP/r.%p.pb.gz,rate=abc" rate
bad_options zero_rate "output=$TMP/z.%p.pb.gz,rate=0" rate
bad_options bad_format "output=$TMP/f.%p.pb.gz,format=xml" format
bad_options bad_depth "output=$TMP/d.%p.pb.gz,max_depth=-3" max_depth
bad_options no_value "output=$TMP/n.%p.pb.gz,seed" seed
# Defaults are kept for the bad key, the good keys still apply.
[ "$(count_files "$TMP/u.*.pb.gz")" = 1 ] || fail "good output= ignored after a bad key"
[ "$(count_files "$TMP/z.*.pb.gz")" = 1 ] || fail "no profile after rate=0"

# Unwritable output directory: a message, the program unharmed.
mkdir "$TMP/ro"
chmod 0555 "$TMP/ro"
if [ "$(id -u)" = 0 ]; then
	target=/proc/allocprof-not-writable/p.%p.pb.gz # root ignores mode bits
else
	target=$TMP/ro/p.%p.pb.gz
fi
same_run unwritable 60 LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="output=$target" \
	-- "$P/stress_threads" 1 2000
grep -q . "$TMP/unwritable.prof.err" || fail "no message for an unwritable output"
[ "$(grep -c . "$TMP/unwritable.prof.err")" -le 3 ] ||
	fail "too many messages: $(head -5 "$TMP/unwritable.prof.err")"
same_run missing_dir 60 LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="output=$TMP/does/not/exist/p.%p.pb.gz" -- "$P/exit_status" exit 0
grep -q . "$TMP/missing_dir.prof.err" || fail "no message for a missing directory"

# max_depth caps every recorded stack (checked with go tool pprof -raw,
# whose sample lines end with the sample's location ids).
if command -v go >/dev/null; then
	mkdir "$TMP/depth"
	same_run depth 60 LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=1,max_depth=3,output=$TMP/depth/p.%p.pb.gz" \
		-- "$P/stress_threads" 1 2000
	go_pprof -raw "$TMP"/depth/p.*.pb.gz >"$TMP/depth.raw" 2>"$TMP/depth.err" ||
		fail "max_depth=3 profile unreadable: $(head -3 "$TMP/depth.err")"
	deepest=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s && /^ *[0-9-]+( +[0-9-]+)+:/ { sub(/^[^:]*:/, ""); if (NF > m) m = NF }
		END { print m + 0 }' "$TMP/depth.raw")
	if [ "$deepest" -lt 1 ] || [ "$deepest" -gt 3 ]; then
		fail "max_depth=3: deepest recorded stack has $deepest frames"
	fi
fi

# An empty or blank ALLOCPROF_OPTIONS is fine and silent.
same_run blank 60 LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS=" , ," -- "$P/exit_status" exit 0
[ ! -s "$TMP/blank.prof.err" ] || fail "blank options: $(cat "$TMP/blank.prof.err")"
echo "options: ok"
