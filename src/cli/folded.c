/*
 * folded.c: the folded-stack writer of folded.h. Stacks are rendered,
 * sorted and merged as text, because different addresses can print the
 * same (one function inlined in two places): folded consumers key on the
 * text, so we must too.
 */
#define _GNU_SOURCE
#include "folded.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

void folded_round_weights(const double *in, size_t n, uint64_t *out)
{
	double prefix = 0;
	uint64_t emitted = 0;
	for (size_t i = 0; i < n; i++) {
		double x = in[i];
		if (x > 0 && isfinite(x))
			prefix += x;
		/* prefix only grows, so the rounded prefix never falls below
		 * what was already emitted. */
		double r = floor(prefix + 0.5);
		uint64_t target = r >= 18446744073709551615.0
					  ? UINT64_MAX
					  : (uint64_t)r;
		out[i] = target - emitted;
		emitted = target;
	}
}

struct folded_line {
	char *text;
	double bytes;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

/* "root;...;leaf" of stack i, malloc'd. */
static char *stack_text(const hv_site *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t k = s->nstack; k-- > 0;) {
		if (k + 1 != s->nstack)
			fputc(';', f);
		txt_folded_frame(f, s->stack[k].function, k + 1 == s->nstack);
	}
	if (!s->nstack)
		txt_folded_frame(f, NULL, true);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int folded_write(const hv_view *v, FILE *out)
{
	size_t n = hv_nstacks(v), m = 0;
	struct folded_line *lines = calloc(n ? n : 1, sizeof *lines);
	double *w = calloc(n ? n : 1, sizeof *w);
	uint64_t *iw = calloc(n ? n : 1, sizeof *iw);
	int rc = 0;
	if (!lines || !w || !iw)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		const hv_site *s = hv_stack_at(v, i);
		lines[i].bytes = s->stat.bytes;
		if (!(lines[i].text = stack_text(s)))
			goto nomem;
	}
	qsort(lines, n, sizeof *lines, cmp_line);
	/* Merge stacks that print the same (equal names, other addresses). */
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(lines[m - 1].text, lines[i].text)) {
			lines[m - 1].bytes += lines[i].bytes;
			free(lines[i].text);
			continue;
		}
		lines[m++] = lines[i];
	}
	n = m;
	for (size_t i = 0; i < n; i++)
		w[i] = lines[i].bytes;
	folded_round_weights(w, n, iw);
	for (size_t i = 0; i < n; i++)
		if (iw[i])
			fprintf(out, "%s %llu\n", lines[i].text,
				(unsigned long long)iw[i]);
	if (ferror(out))
		rc = -1;
	goto done;
nomem:
	errno = ENOMEM;
	rc = -1;
done:
	if (lines)
		for (size_t i = 0; i < n; i++)
			free(lines[i].text);
	free(lines);
	free(w);
	free(iw);
	return rc;
}
