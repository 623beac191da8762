#!/usr/bin/env bash
# preload_matrix_test.sh: the real-program matrix of the host-safety
# guarantees (src/preload/README.md, "Guarantees"). python3, perl, gcc, git
# and sqlite3, each at rate=1, rate=4096 and the default rate, each over
# glibc, jemalloc, tcmalloc and mimalloc: under the runtime every run must
# exit with the status and print the bytes (stdout and stderr) of the same
# program over the same allocator alone, and leave profiles that decode.
# The workloads are small so the 60 runs stay within a couple of minutes
# at rate 1. A run still going after 120 s fails the test with the stack
# of every thread of its processes (one git run over mimalloc at rate=1
# did, once in six full runs on 2026-11-29, and did not again in 180).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

export HOME=$TMP PYTHONHASHSEED=0 GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
export GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" GIT_COMMITTER_DATE="2020-01-01T00:00:00Z"

cat >"$TMP/work.py" <<'EOF'
import json
rows = [{"id": i, "name": "n%d" % i, "tags": [str(i % 7)] * (i % 4)} for i in range(3000)]
blob = json.dumps(rows)
back = json.loads(blob)
big = [bytearray(1 << 18) for _ in range(4)]
print(len(rows), len(blob), len(back), sum(len(b) for b in big))
EOF
cat >"$TMP/work.pl" <<'EOF'
my %h; my @a;
for my $i (1 .. 20000) { $h{"k$i"} = "v" x ($i % 50); push @a, [$i, "x$i"]; }
my $s = join(",", map { $_->[1] } @a[0 .. 999]);
print scalar(keys %h), " ", scalar(@a), " ", length($s), "\n";
EOF
cat >"$TMP/work.c" <<'EOF'
#include <stdio.h>
struct p { int x, y; };
static int sum(const struct p *v, int n) { int s = 0; for (int i = 0; i < n; i++) s += v[i].x * v[i].y; return s; }
int main(void) { struct p v[3] = {{1, 2}, {3, 4}, {5, 6}}; printf("%d\n", sum(v, 3)); return 0; }
EOF
cat >"$TMP/work.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, payload BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
INSERT INTO t SELECT i, 'name-' || i, i % 37, zeroblob(i % 500) FROM n;
CREATE INDEX t_grp ON t(grp, name);
SELECT grp, count(*), sum(length(payload)) FROM t GROUP BY grp ORDER BY grp LIMIT 5;
DELETE FROM t WHERE grp < 5;
SELECT count(*) FROM t;
EOF
cat >"$TMP/git.sh" <<'EOF'
set -e
rm -rf repo && mkdir repo && cd repo
git init -q -b main .
git config user.name allocprof
git config user.email allocprof@example.invalid
for ((i = 1; i <= 30; i++)); do echo "line $i" > "f$i.txt"; done
git add . && git commit -q -m first
echo change >> f7.txt && git commit -q -a -m second
git log --format='%H %s'
EOF

PY=$(command -v python3 || true)
SQ=$(command -v sqlite3 || true)
CC_=$(command -v gcc || true)
[ -n "$PY" ] && [ -n "$SQ" ] && [ -n "$CC_" ] && command -v git >/dev/null &&
	command -v perl >/dev/null ||
	skip "python3, perl, gcc, git and sqlite3 are needed (scripts/deps.sh installs them)"

# run_prog NAME: the program's command words into the array CMD.
run_prog() {
	case $1 in
	python3) CMD=("$PY" "$TMP/work.py") ;;
	perl) CMD=(perl "$TMP/work.pl") ;;
	gcc) CMD=("$CC_" -O1 -o "$TMP/work.out" "$TMP/work.c") ;;
	git) CMD=(bash "$TMP/git.sh") ;;
	sqlite3) CMD=("$SQ" -bail :memory: ".read $TMP/work.sql") ;;
	esac
}

# watched SECONDS CMD...: CMD with a time limit (status 124 past it), but
# first every thread's stack of CMD's processes goes to stderr (gdb, when
# installed; else the kernel's wait channel), so a hang says where it waits.
watched() {
	local secs=$1 n=0 st=0
	shift
	"$@" &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null && [ $n -lt $((secs * 10)) ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		local all=$pid more p
		more=$pid
		while [ -n "$more" ]; do
			more=$(ps -e -o pid=,ppid= | awk -v s=" $more " 'index(s, " " $2 " ") { print $1 }' | xargs)
			all="$all $more"
		done
		echo "--- still running after ${secs} s: every thread's stack" >&2
		for p in $all; do
			echo "--- pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" >&2
			if command -v gdb >/dev/null; then
				gdb -q -batch -p "$p" -ex "thread apply all bt 30" 2>&1 | grep -E '^(#|Thread)' >&2
			else
				grep -H . /proc/"$p"/task/*/wchan >&2 2>/dev/null
			fi
		done
		kill -9 $all 2>/dev/null
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid" || st=$?
	return $st
}

# one ALLOC_NAME ALLOC_PATH PROG RATE: the program over the allocator alone,
# then under the runtime over the same allocator.
one() {
	local an=$1 ap=$2 prog=$3 rate=$4 name="$1.$3.$4" opts="" st_a=0 st_p=0
	[ "$rate" = default ] || opts="rate=$rate,"
	run_prog "$prog"
	mkdir -p "$TMP/prof/$name" "$TMP/wd/$name.a" "$TMP/wd/$name.p"
	(cd "$TMP/wd/$name.a" && LD_PRELOAD="$ap" bounded 120 "${CMD[@]}") \
		</dev/null >"$TMP/$name.a.out" 2>"$TMP/$name.a.err" || st_a=$?
	(cd "$TMP/wd/$name.p" && LD_PRELOAD="$LIB${ap:+ $ap}" \
		ALLOCPROF_OPTIONS="${opts}seed=7,output=$TMP/prof/$name/p.%p.pb.gz" \
		watched 120 "${CMD[@]}") \
		</dev/null >"$TMP/$name.p.out" 2>"$TMP/$name.p.err" || st_p=$?
	[ $st_p != 124 ] ||
		fail "$name: timed out under the runtime: $(grep -A400 -e '--- still running' "$TMP/$name.p.err")"
	[ $st_a = $st_p ] ||
		fail "$name: exit status $st_p under the runtime, $st_a alone; stderr: $(tail -3 "$TMP/$name.p.err")"
	cmp -s "$TMP/$name.a.out" "$TMP/$name.p.out" ||
		fail "$name: stdout differs: $(diff "$TMP/$name.a.out" "$TMP/$name.p.out" | head -5)"
	cmp -s "$TMP/$name.a.err" "$TMP/$name.p.err" ||
		fail "$name: stderr differs: $(diff "$TMP/$name.a.err" "$TMP/$name.p.err" | head -5)"
	check_profiles "$name" "$TMP/prof/$name"
}

runs=0
for alloc in glibc libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
	path=""
	if [ $alloc != glibc ]; then
		path=$(lib_path "$alloc")
		[ -n "$path" ] || fail "$alloc not installed (scripts/deps.sh installs it)"
	fi
	for prog in python3 perl gcc git sqlite3; do
		for rate in 1 4096 default; do
			one "${alloc%%.so*}" "$path" "$prog" "$rate"
			runs=$((runs + 1))
		done
	done
done
echo "$runs runs: identical status and output under the runtime"
