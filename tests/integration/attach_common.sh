# attach_common.sh: sourced by the tests of `allocprof attach` (not a test
# itself): the runtime tests' helpers (preload_smoke_test.sh), PROG (the
# target program, progs/attach_target) and the checks that attach can run
# here (python3 for the profile checks, x86_64, ptrace not disabled).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preload_smoke_test.sh"
PROG=$AP_PROGDIR/attach_target
[ -x "$PROG" ] || fail "test program not built: $PROG"
command -v python3 >/dev/null || skip "python3 is not installed"
[ "$(uname -m)" = x86_64 ] || skip "attach supports x86_64 only"
if [ -r /proc/sys/kernel/yama/ptrace_scope ] &&
	[ "$(cat /proc/sys/kernel/yama/ptrace_scope)" = 3 ]; then
	skip "ptrace disabled (Yama 3)"
fi
