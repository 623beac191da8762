# coverage.gp: how often allocprof's 95% interval contains the truth, against
# the number of samples (bench/suites/accuracy.sh writes the data).
# Usage: gnuplot -e "dir='DATA_DIR'; outfile='coverage.png'" coverage.gp
# DATA_DIR/curve.dat: simulation "expected_s mean_s rms mean_abs coverage reps";
# DATA_DIR/real_coverage.dat: real runs binned by samples "center coverage n".
set terminal pngcairo size 900,620 font "sans,11" noenhanced
set output outfile
set title "allocprof: coverage of the reported 95% interval"
set logscale x
set xrange [0.8:30000]
set yrange [0<*<0.8:1.02]
set xlabel "samples behind the estimate"
set ylabel "fraction of intervals containing the truth"
set grid
set key below vertical
# Binomial standard error of a coverage of 0.95 measured on n replications.
se(n) = sqrt(0.95 * 0.05 / n)
plot 0.95 with lines lw 2 lc rgb "#000000" title "nominal 0.95", \
     dir.'/curve.dat' using 2:5:(1.96 * se($6)) with yerrorlines pt 7 lc rgb "#1f77b4" \
       title "simulation (bars: +-1.96 binomial s.e.)", \
     dir.'/real_coverage.dat' using 1:2:(1.96 * se($3)) \
       with yerrorbars pt 5 ps 1.3 lc rgb "#d62728" title "real runs, binned by samples (bars: same s.e.)"
