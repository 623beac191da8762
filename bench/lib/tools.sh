# bench/lib/tools.sh: the workloads and profiler configurations that the
# comparison suites (compare.sh, accuracy.sh) share. Source it after setting
#   build  (the build directory: bench programs, runtime, CLI)
#   quick  (1 for the short sizes of `bench/run --quick`, else 0)
# It makes the scratch directory $tmp (removed on exit), defines WORKLOADS,
# CONFIGS and the functions below, and fails early, with a message naming
# what is missing, if a required tool is absent.

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
runstat=$build/bench/runstat_bench
ap_lib=$build/liballocprof_preload.so
ap_cli=$build/allocprof
for f in "$runstat" "$build/bench/xthread_bench" "$ap_cli"; do
  [ -x "$f" ] || { echo "bench: $f is not built" >&2; exit 1; }
done
[ -r "$ap_lib" ] || { echo "bench: $ap_lib is not built" >&2; exit 1; }

# lib_path NAME: the x86-64 shared object NAME from the loader cache, or "".
# awk reads to the end: exiting at the first match can kill ldconfig with
# SIGPIPE, which pipefail turns into the suite's failure (exit 141).
lib_path() { ldconfig -p | awk -v n="$1" '!found && $1 == n && /x86-64/ { print $NF; found = 1 }'; }
jemalloc=$(lib_path libjemalloc.so.2)
tcmalloc=$(lib_path libtcmalloc.so.4)
python=/usr/bin/python3
missing=()
[ -n "$jemalloc" ] || missing+=("libjemalloc2")
[ -n "$tcmalloc" ] || missing+=("libgoogle-perftools4")
command -v jeprof >/dev/null || missing+=("libjemalloc-dev (jeprof)")
command -v heaptrack >/dev/null || missing+=("heaptrack")
command -v heaptrack_print >/dev/null || missing+=("heaptrack (heaptrack_print)")
command -v valgrind >/dev/null || missing+=("valgrind")
command -v sqlite3 >/dev/null || missing+=("sqlite3")
[ -x "$python" ] || missing+=("python3 (/usr/bin/python3)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench: missing Debian packages: ${missing[*]} (scripts/deps.sh bench installs them)" >&2
  exit 1
fi

WORKLOADS="micro xthread python sqlite"
# micro reuses the runtime suite's program (bench/malloc_workload_bench.c).
if [ ! -x "$build/bench/malloc_workload_bench" ]; then
  echo "bench: $build/bench/malloc_workload_bench is not built: skipping the micro workload" >&2
  WORKLOADS="xthread python sqlite"
fi
# Sizes: quick runs take ~0.05-0.15 s unprofiled (a smoke test: start-up
# weighs in the ratios), full ones ~0.3-1 s on an idle core.
if [ "$quick" = 1 ]; then
  declare -A SIZE=([micro]=500000 [xthread]=50000 [python]=1 [sqlite]=10000)
else
  declare -A SIZE=([micro]=4000000 [xthread]=400000 [python]=8 [sqlite]=100000)
fi
declare -A WL_DESC=(
  [micro]="bench/malloc_workload_bench mixed ${SIZE[micro]} 1 (one thread, 90% of blocks 16-256 B)"
  [xthread]="bench/xthread_bench ${SIZE[xthread]} 2 (2 producer + 2 consumer threads, every free cross-thread)"
  [python]="python3 bench/workloads/alloc_heavy.py ${SIZE[python]} (PYTHONMALLOC=malloc)"
  [sqlite]="sqlite3 :memory: on bench/workloads/sqlite_workload.sql, ${SIZE[sqlite]} rows"
  [clang]="clang++ -O1 -c bench/workloads/cxx_workload.cpp (a large C++ program without frame pointers; memory suite only)"
)

# workload_cmd NAME: sets WL_CMD (argv array) and WL_ENV (assignments).
workload_cmd() {
  WL_ENV=()
  case "$1" in
    micro) WL_CMD=("$build/bench/malloc_workload_bench" mixed "${SIZE[micro]}" 1) ;;
    xthread) WL_CMD=("$build/bench/xthread_bench" "${SIZE[xthread]}" 2) ;;
    python)
      WL_ENV=(PYTHONHASHSEED=0 PYTHONMALLOC=malloc PYTHONDONTWRITEBYTECODE=1)
      WL_CMD=("$python" "$src_dir/bench/workloads/alloc_heavy.py" "${SIZE[python]}") ;;
    sqlite)
      local sql=$tmp/sqlite_workload.sql
      if [ ! -e "$sql" ]; then
        { echo "CREATE TABLE scale(n); INSERT INTO scale VALUES(${SIZE[sqlite]});"
          cat "$src_dir/bench/workloads/sqlite_workload.sql"; } >"$sql"
      fi
      WL_CMD=(sqlite3 :memory: ".read $sql") ;;
    clang) WL_CMD=(clang++ -O1 -c "$src_dir/bench/workloads/cxx_workload.cpp" -o "$tmp/cxx_workload.o") ;;
    *) echo "bench: unknown workload $1" >&2; exit 1 ;;
  esac
}

# Configurations: NAME -> base configuration its ratio is taken against.
CONFIGS="glibc jemalloc tcmalloc allocprof allocprof_je jeprof heapprofile heaptrack massif"
declare -A BASE=([glibc]=glibc [jemalloc]=jemalloc [tcmalloc]=tcmalloc
  [allocprof]=glibc [allocprof_je]=jemalloc [jeprof]=jemalloc
  [heapprofile]=tcmalloc [heaptrack]=glibc [massif]=glibc)
declare -A CONF_DESC=(
  [allocprof]="allocprof (default rate 512 KiB) over glibc"
  [allocprof_je]="allocprof (default rate 512 KiB) over jemalloc"
  [jeprof]="jemalloc prof (prof:true, lg_prof_sample:19, prof_final:true)"
  [heapprofile]="gperftools HEAPPROFILE over tcmalloc"
  [heaptrack]="heaptrack $(heaptrack --version 2>/dev/null | awk '{ print $2 }') over glibc"
  [massif]="valgrind massif over glibc"
)
jemalloc_prof="prof:true,lg_prof_sample:19,prof_final:true"

# config_cmd CONFIG OUTDIR: sets CF_ENV (assignments) and CF_WRAP (argv
# prefix) to run a workload under CONFIG, writing any profile into OUTDIR.
config_cmd() {
  local c=$1 o=$2
  CF_ENV=() CF_WRAP=()
  case "$c" in
    glibc) ;;
    jemalloc) CF_ENV=("LD_PRELOAD=$jemalloc") ;;
    tcmalloc) CF_ENV=("LD_PRELOAD=$tcmalloc") ;;
    allocprof) CF_ENV=("LD_PRELOAD=$ap_lib" "ALLOCPROF_OPTIONS=output=$o/ap.%p.pb.gz") ;;
    allocprof_je) CF_ENV=("LD_PRELOAD=$ap_lib:$jemalloc" "ALLOCPROF_OPTIONS=output=$o/ap.%p.pb.gz") ;;
    jeprof) CF_ENV=("LD_PRELOAD=$jemalloc" "MALLOC_CONF=$jemalloc_prof,prof_prefix:$o/je") ;;
    heapprofile) CF_ENV=("LD_PRELOAD=$tcmalloc" "HEAPPROFILE=$o/hp") ;;
    heaptrack) CF_WRAP=(heaptrack -o "$o/ht") ;;
    massif) CF_WRAP=(valgrind --tool=massif "--massif-out-file=$o/massif.%p.out" -q) ;;
    *) echo "bench: unknown configuration $c" >&2; exit 1 ;;
  esac
}

# run_measured LOG OUTFILE ENV... -- ARGV...: run ARGV through runstat with
# a clean profiler environment plus ENV; "wall user sys rss status" goes to
# OUTFILE. A failing run stops the suite with its stderr.
run_measured() {
  local log=$1 res=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  # env runs inside runstat so that only the command is profiled.
  if ! "$runstat" -q -o "$res" -- env -u LD_PRELOAD -u MALLOC_CONF -u ALLOCPROF_OPTIONS \
      -u HEAPPROFILE -u PYTHONMALLOC "${envs[@]}" "$@" 2>"$log"; then
    echo "bench: run failed: ${envs[*]} $*" >&2
    tail -20 "$log" >&2
    exit 1
  fi
}

# median: of the numbers on stdin, one per line ("nan" if none).
median() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.9g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
