# bench/lib/paired.sh: helpers of the suites that compare paired runs
# (runtime.sh, timeline.sh). Source it after making $tmp; a suite's runs
# leave "wall loop rss" lines in $tmp/NAME.base and $tmp/NAME.prof.

# median: of the numbers on stdin, one per line.
median() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.9g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# col FILE N: column N of FILE, one value per line.
col() { awk -v n="$2" '{ print $n }' "$1"; }

# ratio NAME N: median over pairs of prof/base for column N.
ratio() {
  paste -d' ' <(col "$tmp/$1.prof" "$2") <(col "$tmp/$1.base" "$2") |
    awk '{ printf "%.6f\n", $1 / $2 }' | median
}

# calc FORMAT EXPR: awk arithmetic, printed with FORMAT.
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
