#!/usr/bin/env bash
# preload_programs_test.sh: real programs under the runtime, at the default
# rate and at rate=1: python3 running an allocation-heavy script, sqlite3
# running a SQL script, git init/add/commit (a shell script forking many
# processes, each profiled), a forking program and a 16-thread stress test
# with cross-thread frees, a program whose allocating library is dlclose'd
# before the dump. Each must exit as it does unprofiled, print
# byte-identical output, say nothing extra on stderr, and leave profiles
# that decode. AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

P=$AP_PROGDIR
PY=$(command -v /usr/bin/python3 || command -v python3 || true)

cat >"$TMP/work.py" <<'EOF'
# Allocation-heavy and deterministic: dicts, lists, strings, big buffers.
import json
rows = []
for i in range(60000):
    rows.append({"id": i, "name": "item-%d" % i, "tags": [str(i % 7)] * (i % 5)})
index = {}
for r in rows:
    index.setdefault(r["name"][-2:], []).append(r["id"])
blob = json.dumps(rows[:5000])
back = json.loads(blob)
big = [bytearray(1 << 20) for _ in range(8)]
text = "".join(str(x) for x in range(100000))
print(len(rows), len(index), len(blob), len(back), sum(len(b) for b in big),
      len(text), sum(index["42"]))
EOF

cat >"$TMP/work.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, payload BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
INSERT INTO t SELECT i, 'name-' || i, i % 97, zeroblob(i % 900) FROM n;
CREATE INDEX t_grp ON t(grp, name);
SELECT grp, count(*), sum(length(payload)), min(name) FROM t GROUP BY grp
  ORDER BY grp LIMIT 10;
SELECT count(DISTINCT name) FROM t WHERE name LIKE '%7%';
UPDATE t SET payload = zeroblob(2000) WHERE id % 10 = 0;
DELETE FROM t WHERE grp < 10;
SELECT count(*), sum(length(payload)) FROM t;
EOF

cat >"$TMP/git.sh" <<'EOF'
set -e
rm -rf repo
mkdir repo
cd repo
git init -q -b main .
git config user.name allocprof
git config user.email allocprof@example.invalid
mkdir d0 d1 d2 d3 d4 d5 d6 d7 d8 d9
for ((i = 1; i <= 200; i++)); do # builtins only: few processes to profile
	for ((k = 1; k <= i; k++)); do echo "$k"; done > "d$((i % 10))/f$i.txt"
done
git add .
git commit -q -m "first"
for ((i = 1; i <= 197; i += 4)); do echo change >> "d$((i % 10))/f$i.txt"; done
git commit -q -a -m "second"
git rev-parse HEAD
git log --stat --format='%H %s' | tail -n 5
git gc -q --prune=now
git fsck --no-progress 2>&1
git count-objects -v | grep -v size
EOF
export GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" GIT_COMMITTER_DATE="2020-01-01T00:00:00Z"
export GIT_CONFIG_NOSYSTEM=1 HOME=$TMP PYTHONHASHSEED=0

# profiled NAME RATE_OPTS SECS CMD...: same_run with the runtime preloaded;
# then every profile it wrote must decode. Echoes the number of profiles.
profiled() {
	local name=$1 opts=$2 secs=$3
	shift 3
	mkdir -p "$TMP/prof/$name"
	same_run "$name" "$secs" LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="${opts}output=$TMP/prof/$name/p.%p.pb.gz" -- "$@"
	[ ! -s "$TMP/$name.prof.err" ] || cmp -s "$TMP/$name.plain.err" "$TMP/$name.prof.err" ||
		fail "$name: extra stderr under the runtime: $(head -3 "$TMP/$name.prof.err")"
	check_profiles "$name" "$TMP/prof/$name"
}

for rate in default 1; do
	opts=""
	[ $rate = 1 ] && opts="rate=1,"
	if [ -n "$PY" ]; then
		profiled "python_$rate" "$opts" 120 "$PY" "$TMP/work.py"
	else
		echo "python3 not installed: not run" >&2
	fi
	if command -v sqlite3 >/dev/null; then
		profiled "sqlite_$rate" "$opts" 120 sqlite3 ":memory:" ".read $TMP/work.sql"
	else
		echo "sqlite3 not installed: not run" >&2
	fi
	if command -v git >/dev/null; then
		(cd "$TMP" && profiled "git_$rate" "$opts" 180 bash "$TMP/git.sh")
		n=$(count_files "$TMP/prof/git_$rate/p.*.pb.gz")
		[ "$n" -ge 8 ] || fail "git: only $n profiles for the shell and its git processes"
	else
		echo "git not installed: not run" >&2
	fi
	profiled "forker_$rate" "$opts" 120 "$P/forker"
	# parent, 3 children, and `true` started by posix_spawn
	n=$(count_files "$TMP/prof/forker_$rate/p.*.pb.gz")
	[ "$n" = 5 ] || fail "forker: $n profiles, want 5 (parent, 3 children, true)"
	profiled "stress_$rate" "$opts" 180 "$P/stress_threads" 2 10000
	# live blocks allocated by a library unloaded before the dump
	profiled "dlopen_$rate" "$opts" 60 "$P/dlopen_alloc"
done
echo "programs: ok"
