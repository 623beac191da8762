# leak_mix_common.sh: sourced by the tests that run progs/leak_mix (a slow
# leak among a cache, a pool and churn) under the runtime and read its
# series with `allocprof leaks` / `allocprof timeline`.
. "$(dirname "$0")/preload_smoke_test.sh"

prog=$AP_PROGDIR/leak_mix
[ -x "$prog" ] || fail "leak_mix not built"
command -v python3 > /dev/null || skip "python3 not installed"

# run_leak_mix "SEEDS" OPTIONS: one 20 s run per seed, side by side, at
# rate 64 KiB with OPTIONS added; profiles in $TMP/SEED/, output in
# $TMP/SEED.out.
run_leak_mix() {
	local s pids=() p
	for s in $1; do
		mkdir -p "$TMP/$s"
		bounded 90 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=65536,seed=$s,$2,output=$TMP/$s/p.%p.%n.pb.gz" \
			"$prog" 20 "$s" > "$TMP/$s.out" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || fail "leak_mix failed"; done
}
