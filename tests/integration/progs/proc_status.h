/*
 * proc_status.h: one field of /proc/self/status for the test programs.
 */
#ifndef AP_TEST_PROC_STATUS_H
#define AP_TEST_PROC_STATUS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of field name ("VmRSS:", with the colon) in kB; -1 if absent. */
static inline long proc_status_kb(const char *name)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(name);
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, name, n) == 0)
			v = atol(line + n);
	if (f)
		fclose(f);
	return v;
}

#endif
