#!/usr/bin/env bash
# preload_rss_limit_test.sh: rss_limit= writes exactly one profile per
# crossing, marked "trigger=rss_limit", before the process could be killed:
# a program climbing past the limit and hovering around it (dipping to 94%,
# above the 90% re-arm level) leaves one; going back to half and climbing
# again leaves a second. rss_limit=N% without a cgroup limit is refused
# with one line. (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
P=$AP_PROGDIR

run() { # NAME TARGETS...
	local name=$1
	shift
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rss_limit=64m,dump_at_exit=0,output=$TMP/$name.%n.pb.gz" \
		"$P/grow_rss" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		fail "$name: grow_rss failed: $(head -3 "$TMP/$name.err")"
	[ "$(cat "$TMP/$name.out")" = done ] || fail "$name: output changed"
	[ ! -s "$TMP/$name.err" ] || fail "$name: stderr: $(head -3 "$TMP/$name.err")"
}

# trigger_of FILE: the trigger and rss_bytes of a profile's memory record.
trigger_of() {
	"$CLI" report --memory --json "$1" | python3 -c '
import json, sys
m = json.load(sys.stdin)["memory"]
print(m["trigger"], m["rss_bytes"])'
}

# 96 MiB, down to 60 (94% of 64: not re-armed), up to 96 again: one dump.
run hover 96 60 96
n=$(count_files "$TMP/hover.*.pb.gz")
[ "$n" = 1 ] || fail "hover: $n profiles for one crossing, want 1"
read -r trig rss < <(trigger_of "$TMP"/hover.0.pb.gz)
[ "$trig" = rss_limit ] || fail "hover: profile marked '$trig', want rss_limit"
[ "$rss" -ge $((64 << 20)) ] || fail "hover: recorded RSS $rss below the limit"

# Two crossings, with a fall to 32 MiB (below 90%) between them: two dumps.
run twice 96 32 96
n=$(count_files "$TMP/twice.*.pb.gz")
[ "$n" = 2 ] || fail "twice: $n profiles for two crossings, want 2"
for f in "$TMP"/twice.*.pb.gz; do
	read -r trig rss < <(trigger_of "$f")
	[ "$trig" = rss_limit ] || fail "twice: $f marked '$trig'"
done

# Never crossing: nothing.
run below 32
[ "$(count_files "$TMP/below.*.pb.gz")" = 0 ] || fail "below: a profile without a crossing"

# A percentage needs a cgroup limit.
limit=$(python3 - <<'PY'
import os
def rd(p):
    try:
        return open(p).read().split()[0]
    except OSError:
        return None
for line in open("/proc/self/cgroup"):
    i, ctl, path = line.rstrip("\n").split(":", 2)
    if i == "0":
        for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
            v = rd(root + path + "/memory.max")
            if v:
                print("none" if v == "max" else v); raise SystemExit
    if "memory" in ctl.split(","):
        v = rd("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes")
        if v:
            print("none" if int(v) >= 1 << 62 else v); raise SystemExit
print("none")
PY
)
if [ "$limit" = none ]; then
	LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rss_limit=90%,dump_at_exit=0" "$P/grow_rss" 4 \
		>/dev/null 2>"$TMP/pct.err" || fail "rss_limit=90%: the program failed"
	grep -q "rss_limit=90%: this process has no memory cgroup limit" "$TMP/pct.err" ||
		fail "rss_limit=90% without a limit: $(cat "$TMP/pct.err")"
	[ "$(wc -l <"$TMP/pct.err")" = 1 ] || fail "rss_limit=90%: more than one line"
fi
echo PASS
