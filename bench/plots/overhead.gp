# overhead.gp: wall-time ratio of each profiler to the unprofiled run on the
# same allocator, per workload (bench/suites/compare.sh writes the data).
# Usage: gnuplot -e "datafile='plot.dat'; outfile='overhead.png'" overhead.gp
# Data: a header "workload TOOL..." then one row per workload of ratios.
set terminal pngcairo size 900,600 font "sans,11" noenhanced
set output outfile
set title "Wall time under each profiler / unprofiled (median of paired runs; log scale)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [0.5:500]
set ytics (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)
set grid ytics
set ylabel "ratio to unprofiled (x)"
set key below horizontal
plot datafile using 2:xtic(1) title columnheader(2) lc rgb "#1f77b4", \
     '' using 3 title columnheader(3) lc rgb "#6baed6", \
     '' using 4 title columnheader(4) lc rgb "#2ca02c", \
     '' using 5 title columnheader(5) lc rgb "#d62728", \
     '' using 6 title columnheader(6) lc rgb "#ff7f0e", \
     '' using 7 title columnheader(7) lc rgb "#9467bd", \
     1.05 with lines dt 2 lw 2 lc rgb "#c00000" title "1.05x: allocprof target over glibc"
