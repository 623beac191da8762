# bench/lib/shift.sh: how far one set of independent runs is shifted from
# another, with an exact confidence interval (memory.sh). Source it.

# shift_ci BASE_FILE PROF_FILE: the shift of PROF's values over BASE's (one
# number a line each, independent runs): the Hodges-Lehmann estimate (the
# median of all m*n differences prof_i - base_j) and the distribution-free
# confidence interval of the Mann-Whitney test, [D_(w+1), D_(mn-w)] over
# the sorted differences, w the largest with 2 P(U <= w) <= 0.05 under no
# shift (w = 0 when even that exceeds it, as for 3 runs each). Prints
# "estimate low high confidence"; the confidence is the interval's exact
# one, 1 - 2 P(U <= w) (0.962 for 7 runs each, 0.953 for 11, 0.9 for 3).
shift_ci() {
  awk 'FNR == NR { a[++m] = $1; next } { b[++n] = $1 }
  function cnt(mm, nn, u,   key, r) { # arrangements of mm + nn with U = u
    if (u < 0) return 0
    if (mm == 0 || nn == 0) return u == 0
    key = mm SUBSEP nn SUBSEP u
    if (key in memo) return memo[key]
    r = cnt(mm - 1, nn, u - nn) + cnt(mm, nn - 1, u)
    memo[key] = r
    return r
  }
  END {
    if (m == 0 || n == 0) { print "nan nan nan nan"; exit }
    k = 0
    for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) d[++k] = b[i] - a[j]
    for (i = 2; i <= k; i++) { x = d[i]; j = i - 1
      while (j > 0 && d[j] > x) { d[j + 1] = d[j]; j-- } d[j + 1] = x }
    hl = (k % 2) ? d[(k + 1) / 2] : (d[k / 2] + d[k / 2 + 1]) / 2
    total = 0
    for (u = 0; u <= k; u++) total += cnt(m, n, u)
    w = 0; cum = cnt(m, n, 0) / total
    while (w + 1 < k / 2) {
      c = cum + cnt(m, n, w + 1) / total
      if (2 * c > 0.05) break
      cum = c; w++
    }
    if (2 * cum > 0.05) w = 0
    printf "%.0f %.0f %.0f %.3f\n", hl, d[w + 1], d[k - w], 1 - 2 * cum
  }' "$1" "$2"
}

# median_ci FILE: the sign test's distribution-free confidence interval for
# the median of FILE's values (one a line, independent): [x_(k), x_(n+1-k)]
# over the sorted values, k the largest with 2 P(Bin(n, 1/2) <= k - 1) <=
# 0.05 (k = 1, the whole range, when even that exceeds it). Prints "low high
# confidence" (21 values: x_(6) to x_(16), 0.973).
median_ci() {
  sort -g "$1" | awk '{ x[++n] = $1 }
  END {
    if (n == 0) { print "nan nan nan"; exit }
    p = 0.5 ^ n; cum = p; k = 1 # cum = P(Bin(n, 1/2) <= k - 1)
    while (k < (n + 1) / 2) {
      p = p * (n - (k - 1)) / k # P(Bin = k)
      if (2 * (cum + p) > 0.05) break
      cum += p; k++
    }
    printf "%s %s %.3f\n", x[k], x[n + 1 - k], 1 - 2 * cum
  }'
}
