/*
 * log.h: the runtime's only way to talk: one line on stderr.
 */
#ifndef AP_PRELOAD_LOG_H
#define AP_PRELOAD_LOG_H

/*
 * Print "allocprof: " + the formatted message + newline on stderr with one
 * write(2): no stdio locks or buffers, so it is safe in a fork child and
 * while the program holds stdio. Lines are cut at ~500 bytes.
 */
void rt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
