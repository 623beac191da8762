#!/usr/bin/python3
"""Regenerate the reference tables in tests/data with mpmath.

Writes betainc.tsv, negbinom_cdf.tsv and negbinom_quantiles.tsv (into the
directory given as the only argument, default: this script's directory).
Neither the build nor the tests run this script: the tables are checked in,
and tests/unit/specfun_test.c compares liballocprof's special functions with
them. Run it by hand after changing a grid below, with Debian's
python3-mpmath:

    apt-get install -y python3-mpmath
    /usr/bin/python3 tests/data/gen_reference.py

Method. Every value is computed twice, by two unrelated methods at two
precisions, and the two must agree to AGREE_REL relative; the printed value
is the double nearest the exact one (Python's repr: the shortest decimal that
reads back as that double). Parameters are the decimals as printed in the
tables, not their nearest doubles.

- I_x(a, b): mpmath's own betainc (hypergeometric series) at WORK_DIGITS,
  or, in the far upper tails where that series gives up, a sum of positive
  terms (DLMF 8.17.8) taken from the complement side; and the classic
  continued fraction (DLMF 8.17.22, modified Lentz) with a loggamma
  prefactor at CHECK_DIGITS.
- The negative binomial counts failures before the s-th success with success
  probability p: CDF(f; s, p) = P(F <= f) = I_p(s, f + 1). It is summed as
  P(Binomial(f + s, p) >= s), a finite sum of s terms, at WORK_DIGITS, and
  checked against the continued fraction above at CHECK_DIGITS.
- A quantile is the smallest integer f >= 0 with CDF(f; s, p) >= q, found by
  bisection on the binomial sum; where the CDF equals q to within the
  working precision, the sum is redone in rational arithmetic to settle
  the tie exactly (at p = 0.5, CDF(s - 1; s, p) is exactly 1/2, so the
  median is s - 1). Unless q is exactly a double, the script
  refuses a row whose CDF lies within QUANTILE_MARGIN (relative) of q on
  either side of f, so rounding q to a double cannot change the answer.
"""
import os
import sys
from fractions import Fraction
from math import comb

import mpmath
from mpmath import mp, mpf

WORK_DIGITS = 60
CHECK_DIGITS = 80
AGREE_REL = mpf("1e-45")
QUANTILE_MARGIN = mpf("1e-15")

# The grids. Parameters are printed with repr(), so 1e3 appears as 1000.0.
BETA_A = [0.5, 1, 2, 5, 10, 100, 1000]
BETA_B = [0.5, 1, 3, 10, 1e3, 1e5, 1e6]
BETA_X = [1e-7, 1e-5, 0.001, 0.01, 0.1, 0.5, 0.9, 0.999]
NB_S = [1, 2, 3, 5, 8, 10, 50, 200]
NB_P = [1 / 102400, 2.0**-19, 2.0**-12, 0.01, 0.5]
NB_Q = [0.0005, 0.005, 0.025, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975, 0.995,
        0.9995]


def dec(v):
    """The parameter exactly as printed, at the current precision."""
    return mpf(repr(v))


def betainc_series(a, b, x):
    """I_x(a, b) for 0 < x < 1 by the series of positive terms
    x^a (1-x)^b / (a B(a, b)) * sum_n (a+b)_n / (a+1)_n x^n (DLMF 8.17.8),
    on the side of the mean where its term ratio stays below 1. Slow when
    that ratio is near 1 (x' near 1)."""
    if x > a / (a + b):
        return 1 - betainc_series(b, a, 1 - x)
    log_front = (a * mp.log(x) + b * mp.log1p(-x) - mp.log(a) -
                 (mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b)))
    eps = mpf(2) ** (-mp.prec - 10)
    term, total, n = mpf(1), mpf(1), 0
    while True:
        ratio = (a + b + n) * x / (a + 1 + n)
        term *= ratio
        total += term
        n += 1
        # The ratio moves monotonically towards x, so every later one is
        # below max(ratio, x) < 1 and the tail is below a geometric series.
        r_max = max(ratio, x)
        if term * r_max / (1 - r_max) <= eps * total:
            break
    return mp.exp(log_front) * total


def betainc_mpmath(a, b, x):
    """I_x(a, b) by mpmath.betainc (hypergeometric), or where its series
    gives up or cannot reach the precision (far upper tails with b >= 1e5,
    I within 1e-16 of 1) by
    betainc_series, which is quick there."""
    try:
        return mpmath.betainc(a, b, 0, x, regularized=True)
    except (mpmath.libmp.NoConvergence, ValueError):
        return betainc_series(a, b, x)


def betainc_fraction(a, b, x):
    """I_x(a, b) by the continued fraction, 0 < x < 1."""
    if x > (a + 1) / (a + b + 2):
        return 1 - betainc_fraction(b, a, 1 - x)
    log_front = (a * mp.log(x) + b * mp.log1p(-x) - mp.log(a) -
                 (mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b)))
    tiny = mpf(2) ** (-4 * mp.prec)
    eps = mpf(2) ** (-mp.prec - 8)
    # Modified Lentz on K = 1 + d1 / (1 + d2 / (1 + ...)); I = front / K.
    f, c, d = mpf(1), mpf(1), mpf(0)
    for k in range(1, 10**7):
        m = k // 2
        if k % 2:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1 + num * d
        d = 1 / (d if d != 0 else tiny)
        c = 1 + num / c
        c = c if c != 0 else tiny
        f *= c * d
        if abs(c * d - 1) < eps:
            return mp.exp(log_front) / f
    sys.exit("gen_reference: continued fraction did not converge at "
             "(%s, %s, %s)" % (a, b, x))


def nb_cdf_binomial(f, s, p):
    """P(F <= f) = P(Binomial(f + s, p) >= s), summed exactly."""
    n = f + s
    term = (1 - p) ** n  # k = 0
    below = mpf(0)
    for k in range(s):
        below += term
        term *= mpf(n - k) / (k + 1) * p / (1 - p)
    return 1 - below


def nb_cdf_exact(f, s, p_text):
    """The same sum in rational arithmetic: only for deciding ties (the
    CDF equal to q, as at p = 0.5 where I_1/2(s, s) = 1/2 exactly)."""
    p = Fraction(p_text)
    n = f + s
    below = sum(Fraction(comb(n, k)) * p**k * (1 - p)**(n - k)
                for k in range(s))
    return 1 - below


def cdf_reaches(f, s, p_text, q_text):
    """CDF(f; s, p) >= q, exactly even when the two are equal."""
    v = nb_cdf_binomial(f, s, mpf(p_text))
    if abs(v - mpf(q_text)) > mpf(10) ** (10 - mp.dps):
        return v >= mpf(q_text)
    return nb_cdf_exact(f, s, p_text) >= Fraction(q_text)


def nb_quantile(q, s, p):
    """Smallest f >= 0 with CDF(f; s, p) >= q; q, p as printed decimals."""
    if cdf_reaches(0, s, p, q):
        return 0
    lo, hi = 0, 1  # CDF(lo) < q
    while not cdf_reaches(hi, s, p, q):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cdf_reaches(mid, s, p, q):
            hi = mid
        else:
            lo = mid
    return hi


def agreed(first, second, where):
    """first() at WORK_DIGITS and second() at CHECK_DIGITS must agree;
    returns the double nearest the value."""
    with mp.workdps(WORK_DIGITS):
        v = first()
    with mp.workdps(CHECK_DIGITS):
        w = second()
        if abs(v - w) > AGREE_REL * abs(w):
            sys.exit("gen_reference: methods disagree at %s: %s vs %s"
                     % (where, v, w))
    # float() of a decimal string rounds to nearest (mpf's own conversion
    # does not promise to); 40 digits leave no double rounding in practice.
    return float(mp.nstr(w, 40, min_fixed=1, max_fixed=0))


def header(what, columns):
    lines = what + [
        "Made by tests/data/gen_reference.py with Python %d.%d and mpmath %s"
        % (sys.version_info[0], sys.version_info[1], mpmath.__version__),
        "(Debian python3-mpmath) at %d significant digits, checked at %d;"
        % (WORK_DIGITS, CHECK_DIGITS),
        "values are the nearest double, printed with repr() (<= 17 digits);",
        "parameters are the decimals as printed. See that script for the",
        "method. Lines starting with '#' are comments.",
        "\t".join(columns),
    ]
    return "".join("# " + l + "\n" for l in lines)


def betainc_table():
    rows = []
    for a in BETA_A:
        for b in BETA_B:
            for x in BETA_X:
                v = agreed(lambda: betainc_mpmath(dec(a), dec(b), dec(x)),
                           lambda: betainc_fraction(dec(a), dec(b), dec(x)),
                           (a, b, x))
                rows.append((a, b, x, v))
    return rows


def negbin_tables():
    qrows, crows = [], []
    for s in NB_S:
        for p in NB_P:
            for q in NB_Q:
                with mp.workdps(WORK_DIGITS):
                    f = nb_quantile(repr(q), s, repr(p))
                    above = nb_cdf_binomial(f, s, dec(p)) - dec(q)
                    below = dec(q) - (nb_cdf_binomial(f - 1, s, dec(p))
                                      if f > 0 else mpf(0))
                    # q as a double is q itself: ties (p = 0.5) are fine.
                    exact = mpf(q) == dec(q)
                    if not exact and min(above, below) <= \
                            QUANTILE_MARGIN * dec(q):
                        sys.exit("gen_reference: quantile (%r, %r, %r) too "
                                 "close to a step" % (s, p, q))
                qrows.append((s, p, q, f))
                # The quantile and the point just below it: the CDF's step.
                for g in (f, max(f - 1, 0)):
                    v = agreed(
                        lambda: nb_cdf_binomial(g, s, dec(p)),
                        lambda: betainc_fraction(mpf(s), mpf(g + 1), dec(p)),
                        (s, p, g))
                    crows.append((s, p, g, v))
    return qrows, crows


def write(path, head, rows):
    with open(path, "w") as f:
        f.write(head)
        for r in rows:
            f.write("\t".join(repr(v) for v in r) + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    write(os.path.join(out, "betainc.tsv"),
          header(["Regularized incomplete beta I_x(a, b) = B(x; a, b) / "
                  "B(a, b)."], ["a", "b", "x", "I"]),
          betainc_table())
    qrows, crows = negbin_tables()
    nb = ["Negative binomial: failures F before the s-th success, success",
          "probability p per trial; CDF(f; s, p) = P(F <= f) = I_p(s, f+1)."]
    write(os.path.join(out, "negbinom_cdf.tsv"),
          header(nb + ["Rows: each quantile f of negbinom_quantiles.tsv and "
                       "max(f-1, 0)."], ["s", "p", "failures", "cdf"]),
          crows)
    write(os.path.join(out, "negbinom_quantiles.tsv"),
          header(nb + ["Quantile: the smallest integer f >= 0 with "
                       "CDF(f; s, p) >= q."], ["s", "p", "q", "failures"]),
          qrows)


if __name__ == "__main__":
    main()
