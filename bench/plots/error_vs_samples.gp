# error_vs_samples.gp: allocprof's relative error against its sample count,
# with the theoretical 1/sqrt(s) (bench/suites/accuracy.sh writes the data).
# Usage: gnuplot -e "dir='DATA_DIR'; outfile='error_vs_samples.png'" error_vs_samples.gp
# DATA_DIR/curve.dat: simulation rows "expected_s mean_s rms mean_abs coverage reps";
# DATA_DIR/points.dat: real runs "samples abs_rel_err", one per site and seed.
set terminal pngcairo size 900,600 font "sans,11" noenhanced
set output outfile
set title "allocprof: relative error of a site's bytes against its number of samples"
set logscale xy
set xrange [0.8:30000]
set yrange [0.001:3]
set format y "%g"
set xlabel "samples behind the estimate"
set ylabel "relative error"
set grid
set key top right
plot 1/sqrt(x) with lines lw 2 lc rgb "#000000" title "theory: RMS = 1/sqrt(s)", \
     dir.'/curve.dat' using 2:3 with linespoints pt 7 ps 1.2 lc rgb "#1f77b4" \
       title "simulation, small objects: RMS error", \
     dir.'/curve.dat' using 2:4 with linespoints pt 6 ps 1 dt 2 lc rgb "#6baed6" \
       title "simulation: mean |error| (theory 0.8/sqrt(s))", \
     dir.'/points.dat' using 1:($2 > 0.001 ? $2 : 0.001) with points pt 2 ps 0.8 \
       lc rgb "#d62728" title "real runs: |error| per site and seed"
