/*
 * flamegraph.c: the stack tree and the interactive SVG writer behind
 * allocprof flame (see flamegraph.h).
 *
 * The tree interns frame names once and finds a child by (parent, name) in an
 * open-addressing table, so adding a stack costs O(depth). Writing sorts each
 * frame's children by name (the layout is then deterministic and independent
 * of the order stacks were added), lays the tree out left to right in
 * proportion to estimated bytes, and emits one <g> per frame carrying what
 * the embedded script needs (parent index, position and width as fractions
 * of the total, bytes, name). The script (flamegraph.js) is plain ES5
 * inside CDATA: no external resources, so the file opens anywhere an SVG
 * does.
 */
#define _POSIX_C_SOURCE 200809L
#include "flamegraph.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "text.h"

enum { FG_FRAME_H = 16, FG_FONT = 12, FG_PAD = 10, FG_TOP = 3 * FG_FRAME_H,
       FG_BOTTOM = 2 * FG_FRAME_H };
#define FG_CHAR_W (0.59 * FG_FONT) /* mean glyph width of the font, px */
/* Shown where a hovered frame's details go; flamegraph.js holds the same
 * text as its HINT (tests/unit/flamegraph_test.c checks they agree). */
#define FG_HINT "Click a frame to zoom, Ctrl-F or / to search, Escape to go back"

struct fg_node {
	uint32_t name;   /* index into names[] */
	uint32_t parent; /* UINT32_MAX for the root */
	uint32_t depth;
	double bytes, samples;
};

/* Open-addressing set of indices (+1; 0 = empty), hashed by the caller. */
struct fg_table {
	uint32_t *slots;
	size_t cap; /* power of two */
	size_t n;
};

struct ap_fg {
	struct fg_node *nodes;
	size_t nnodes, capnodes;
	unsigned char *payloads; /* nnodes * psize bytes */
	size_t psize, cappayloads;
	ap_fg_add_fn padd;
	char **names;
	uint64_t *name_hash;
	size_t nnames, capnames;
	struct fg_table name_tab; /* name string -> names[] index */
	struct fg_table edge_tab; /* (parent, name) -> nodes[] index */
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t edge_hash(uint32_t parent, uint32_t name)
{
	return mix64(((uint64_t)parent << 32) | name);
}

/* Room for one more node (and its zeroed payload). */
static int reserve_node(ap_fg *g)
{
	if (ap_cli_grow((void **)&g->nodes, &g->capnodes, g->nnodes + 1,
		 sizeof *g->nodes))
		return -1;
	if (!g->psize)
		return 0;
	if (ap_cli_grow((void **)&g->payloads, &g->cappayloads, g->nnodes + 1,
		 g->psize))
		return -1;
	memset(g->payloads + g->nnodes * g->psize, 0, g->psize);
	return 0;
}

static uint64_t entry_hash(const ap_fg *g, const struct fg_table *t,
			   uint32_t idx)
{
	if (t == &g->name_tab)
		return g->name_hash[idx];
	const struct fg_node *nd = &g->nodes[idx];
	return edge_hash(nd->parent, nd->name);
}

/* Double the table and re-insert every entry. */
static int table_rehash(ap_fg *g, struct fg_table *t)
{
	size_t nc = t->cap ? t->cap * 2 : 256;
	uint32_t *ns = calloc(nc, sizeof *ns);
	if (!ns)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i])
			continue;
		size_t j = entry_hash(g, t, t->slots[i] - 1) & (nc - 1);
		while (ns[j])
			j = (j + 1) & (nc - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = nc;
	return 0;
}

static uint32_t intern(ap_fg *g, const char *name)
{
	if (!name || !*name)
		name = "[unknown]";
	uint64_t h = fnv1a(name);
	struct fg_table *t = &g->name_tab;
	if ((t->n + 1) * 2 > t->cap && table_rehash(g, t))
		return UINT32_MAX;
	size_t j = h & (t->cap - 1);
	for (; t->slots[j]; j = (j + 1) & (t->cap - 1)) {
		uint32_t k = t->slots[j] - 1;
		if (g->name_hash[k] == h && !strcmp(g->names[k], name))
			return k;
	}
	if (g->nnames >= UINT32_MAX - 1)
		return UINT32_MAX;
	size_t capn = g->capnames;
	if (ap_cli_grow((void **)&g->names, &capn, g->nnames + 1, sizeof *g->names) ||
	    ap_cli_grow((void **)&g->name_hash, &g->capnames, g->nnames + 1,
		 sizeof *g->name_hash))
		return UINT32_MAX;
	char *copy = strdup(name);
	if (!copy)
		return UINT32_MAX;
	g->names[g->nnames] = copy;
	g->name_hash[g->nnames] = h;
	t->slots[j] = (uint32_t)g->nnames + 1;
	t->n++;
	return (uint32_t)g->nnames++;
}

static uint32_t child(ap_fg *g, uint32_t parent, uint32_t name)
{
	struct fg_table *t = &g->edge_tab;
	if ((t->n + 1) * 2 > t->cap && table_rehash(g, t))
		return UINT32_MAX;
	size_t j = edge_hash(parent, name) & (t->cap - 1);
	for (; t->slots[j]; j = (j + 1) & (t->cap - 1)) {
		const struct fg_node *nd = &g->nodes[t->slots[j] - 1];
		if (nd->parent == parent && nd->name == name)
			return t->slots[j] - 1;
	}
	if (g->nnodes >= UINT32_MAX - 1 || reserve_node(g))
		return UINT32_MAX;
	struct fg_node *nd = &g->nodes[g->nnodes];
	memset(nd, 0, sizeof *nd);
	nd->name = name;
	nd->parent = parent;
	nd->depth = g->nodes[parent].depth + 1;
	t->slots[j] = (uint32_t)g->nnodes + 1;
	t->n++;
	return (uint32_t)g->nnodes++;
}

ap_fg *ap_fg_create(size_t payload_size, ap_fg_add_fn add)
{
	if ((payload_size && !add) || payload_size > 65536) {
		errno = EINVAL;
		return NULL;
	}
	ap_fg *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	/* Round up so every node's payload stays aligned for any type. */
	size_t al = _Alignof(max_align_t);
	g->psize = (payload_size + al - 1) / al * al;
	g->padd = add;
	uint32_t root = intern(g, "all");
	if (root == UINT32_MAX || reserve_node(g)) {
		ap_fg_destroy(g);
		return NULL;
	}
	memset(&g->nodes[0], 0, sizeof g->nodes[0]);
	g->nodes[0].name = root;
	g->nodes[0].parent = UINT32_MAX;
	g->nnodes = 1;
	return g;
}

void ap_fg_destroy(ap_fg *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nnames; i++)
		free(g->names[i]);
	free(g->names);
	free(g->name_hash);
	free(g->nodes);
	free(g->payloads);
	free(g->name_tab.slots);
	free(g->edge_tab.slots);
	free(g);
}

int ap_fg_add(ap_fg *g, const char *const *frames, size_t nframes,
	      double bytes, double samples, const void *payload)
{
	if (!g || (nframes && !frames) || !(bytes >= 0) || !isfinite(bytes) ||
	    !(samples >= 0) || !isfinite(samples) || (g->psize && !payload)) {
		errno = EINVAL;
		return -1;
	}
	/* Resolve the whole path first so a failure leaves the sums intact. */
	uint32_t node = 0;
	for (size_t i = 0; i < nframes; i++) {
		uint32_t name = intern(g, frames[i]);
		if (name == UINT32_MAX || (node = child(g, node, name)) ==
						  UINT32_MAX) {
			errno = ENOMEM;
			return -1;
		}
	}
	for (;;) {
		g->nodes[node].bytes += bytes;
		g->nodes[node].samples += samples;
		if (g->psize)
			g->padd(g->payloads + node * g->psize, payload);
		if (!node)
			break;
		node = g->nodes[node].parent;
	}
	return 0;
}

double ap_fg_total(const ap_fg *g)
{
	return g->nodes[0].bytes;
}

size_t ap_fg_nframes(const ap_fg *g)
{
	return g->nnodes;
}

/* A warm colour (red to yellow) chosen by the name alone. */
void ap_fg_name_colour(const char *name, char *buf, size_t n)
{
	uint64_t h = mix64(fnv1a(name));
	unsigned r = 205 + (unsigned)(h % 51);
	unsigned gr = 60 + (unsigned)((h >> 16) % 171);
	unsigned b = 20 + (unsigned)((h >> 32) % 56);
	snprintf(buf, n, "rgb(%u,%u,%u)", r, gr, b);
}

/* A callback's colour goes into an attribute: keep only what a CSS
 * colour needs, so it cannot break the markup. */
static void sanitize_colour(char *c)
{
	for (; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("#(),. %", *c)))
			*c = ' ';
}

/* Children of every node in name order, as CSR arrays. */
struct fg_layout {
	uint32_t *start; /* nnodes + 1 offsets into kids */
	uint32_t *kids;
	double *x; /* left edge of each node, in bytes from the left */
	uint32_t *out_index; /* emitted index, UINT32_MAX = omitted */
	double *lo, *hi;     /* tooltip interval per node, once computed */
	signed char *iv;     /* 0 not yet, 1 computed, -1 none available */
};

static const ap_fg *sort_graph; /* qsort has no context argument */

static int cmp_by_name(const void *a, const void *b)
{
	const struct fg_node *na = &sort_graph->nodes[*(const uint32_t *)a];
	const struct fg_node *nb = &sort_graph->nodes[*(const uint32_t *)b];
	return strcmp(sort_graph->names[na->name], sort_graph->names[nb->name]);
}

static void layout_free(struct fg_layout *l)
{
	free(l->start);
	free(l->kids);
	free(l->x);
	free(l->out_index);
	free(l->lo);
	free(l->hi);
	free(l->iv);
}

static int layout_build(const ap_fg *g, struct fg_layout *l)
{
	size_t n = g->nnodes;
	l->start = calloc(n + 1, sizeof *l->start);
	l->kids = calloc(n, sizeof *l->kids);
	l->x = calloc(n, sizeof *l->x);
	l->out_index = calloc(n, sizeof *l->out_index);
	l->lo = calloc(n, sizeof *l->lo);
	l->hi = calloc(n, sizeof *l->hi);
	l->iv = calloc(n, sizeof *l->iv);
	if (!l->start || !l->kids || !l->x || !l->out_index || !l->lo ||
	    !l->hi || !l->iv) {
		layout_free(l);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 1; i < n; i++)
		l->start[g->nodes[i].parent + 1]++;
	for (size_t i = 0; i < n; i++)
		l->start[i + 1] += l->start[i];
	uint32_t *fill = l->out_index; /* scratch: next free slot per parent */
	memcpy(fill, l->start, n * sizeof *fill);
	for (size_t i = 1; i < n; i++)
		l->kids[fill[g->nodes[i].parent]++] = (uint32_t)i;
	sort_graph = g;
	for (size_t i = 0; i < n; i++)
		qsort(l->kids + l->start[i], l->start[i + 1] - l->start[i],
		      sizeof *l->kids, cmp_by_name);
	sort_graph = NULL;
	/* Parents precede children in node order, so one pass places all. */
	for (size_t i = 0; i < n; i++) {
		double x = l->x[i];
		for (uint32_t k = l->start[i]; k < l->start[i + 1]; k++) {
			l->x[l->kids[k]] = x;
			x += g->nodes[l->kids[k]].bytes;
		}
	}
	return 0;
}

static const char fg_style[] =
	"text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"
	"#title{font-size:17px;text-anchor:middle}\n"
	"#subtitle{fill:#555;text-anchor:middle}\n"
	".btn{cursor:pointer;fill:#333}\n.btn:hover{fill:#06c}\n"
	"#matched{text-anchor:end}\n"
	"g.f{cursor:pointer}\ng.f:hover rect{stroke:#000;stroke-width:0.5}\n"
	"g.f text{pointer-events:none}\n"
	"g.anc rect{opacity:0.55}\n";

/* Zoom, search, details: flamegraph.js, embedded at build time as
 * fg_script (embed.cmake). */
#include "flamegraph_js.h"

static void write_header(const ap_fg *g, const ap_fg_options *o, unsigned w,
			 unsigned h, double minw, FILE *out)
{
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"data-total=\"%.17g\" data-minw=\"%g\" data-unit=\"",
		w, h, w, h, g->nodes[0].bytes, minw);
	txt_xml_escape(out, o->unit_label ? o->unit_label : "", 0);
	fprintf(out, "\">\n<style type=\"text/css\"><![CDATA[\n%s]]></style>\n",
		fg_style);
	fprintf(out, "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" "
		     "y2=\"1\"><stop offset=\"5%%\" stop-color=\"#eeeeee\"/>"
		     "<stop offset=\"95%%\" stop-color=\"#eeeeb0\"/>"
		     "</linearGradient></defs>\n");
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
		     "fill=\"url(#bg)\"/>\n", w, h);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"22\">", w / 2);
	txt_xml_escape(out, o->title ? o->title : "Flame graph", 0);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"40\">", w / 2);
	txt_xml_escape(out, o->subtitle ? o->subtitle : "", 0);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"22\" "
		     "style=\"display:none\">Reset zoom</text>\n", FG_PAD);
	fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"22\">"
		     "Search</text>\n", w - FG_PAD - 90);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\">%s</text>\n",
		FG_PAD, h - 10, FG_HINT);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n",
		w - FG_PAD, h - 10);
}

/*
 * Node i's interval, computed once. A frame whose summed payload is
 * bitwise the same as its parent's (a caller with one callee and no
 * allocations of its own: long chains of them are the norm) reuses the
 * parent's, which is already known because parents are written first. This
 * spares most of the special-function work of exact intervals.
 */
static bool node_interval(const ap_fg *g, const ap_fg_options *o,
			  struct fg_layout *l, size_t i, double *lo, double *hi)
{
	if (!l->iv[i]) {
		const unsigned char *pl = g->payloads + i * g->psize;
		uint32_t par = g->nodes[i].parent;
		if (i && l->iv[par] &&
		    !memcmp(pl, g->payloads + par * g->psize, g->psize)) {
			l->iv[i] = l->iv[par];
			l->lo[i] = l->lo[par];
			l->hi[i] = l->hi[par];
		} else {
			l->iv[i] = o->interval(o->ctx, pl, &l->lo[i],
					       &l->hi[i]) ? -1 : 1;
		}
	}
	*lo = l->lo[i];
	*hi = l->hi[i];
	return l->iv[i] > 0;
}

static void write_tooltip(const ap_fg *g, const ap_fg_options *o,
			  struct fg_layout *l, size_t i, FILE *out)
{
	const struct fg_node *nd = &g->nodes[i];
	char b[32], lo_s[32], hi_s[32];
	double total = g->nodes[0].bytes;
	ap_cli_format_bytes(nd->bytes, AP_BYTES_FIXED, b, sizeof b);
	fputs("<title>", out);
	txt_xml_escape(out, g->names[nd->name], 0);
	fprintf(out, "&#10;%s %s (%.0f B), %.2f%% of the total", b,
		o->unit_label ? o->unit_label : "", nd->bytes,
		total > 0 ? 100.0 * nd->bytes / total : 0.0);
	double lo, hi;
	if (o->interval && g->psize && node_interval(g, o, l, i, &lo, &hi)) {
		ap_cli_format_bytes(lo, AP_BYTES_FIXED, lo_s, sizeof lo_s);
		ap_cli_format_bytes(hi, AP_BYTES_FIXED, hi_s, sizeof hi_s);
		fprintf(out, "&#10;%g%% interval [%s, %s]", 100.0 * o->level,
			lo_s, hi_s);
	}
	fprintf(out, "&#10;%.0f sample%s", nd->samples,
		nd->samples == 1 ? "" : "s");
	char note[512];
	if (o->note && g->psize &&
	    !o->note(o->ctx, g->payloads + i * g->psize, note, sizeof note)) {
		fputs("&#10;", out);
		txt_xml_escape(out, note, 0);
	}
	fputs("</title>", out);
}

int ap_fg_write_svg(const ap_fg *g, const ap_fg_options *opt, FILE *out)
{
	ap_fg_options o = {0};
	if (opt)
		o = *opt;
	unsigned w = o.width ? o.width : 1200;
	if (w < 200)
		w = 200;
	double minw = o.min_width == 0 ? 0.1 : o.min_width < 0 ? 0 : o.min_width;
	double avail = (double)w - 2 * FG_PAD;
	double total = g->nodes[0].bytes;
	struct fg_layout l;
	if (layout_build(g, &l))
		return -1;
	/* Decide which frames are drawn; a child is never wider than its parent,
	 * so omitting a frame omits its subtree. */
	uint32_t emitted = 0, maxdepth = 0;
	for (size_t i = 0; i < g->nnodes; i++)
		l.out_index[i] = UINT32_MAX;
	for (size_t i = 0; i < g->nnodes; i++) {
		const struct fg_node *nd = &g->nodes[i];
		double px = total > 0 ? nd->bytes / total * avail : 0;
		bool parent_ok = !i || l.out_index[nd->parent] != UINT32_MAX;
		if (i && (!parent_ok || px < minw))
			continue;
		l.out_index[i] = 1; /* numbered in drawing order below */
		if (nd->depth > maxdepth)
			maxdepth = nd->depth;
	}
	unsigned h = FG_TOP + FG_BOTTOM + (maxdepth + 1) * FG_FRAME_H;
	write_header(g, &o, w, h, minw, out);
	fputs("<g id=\"frames\">\n", out);
	/* Depth-first, children in name order: parents get lower indices. */
	uint32_t *stack = malloc((g->nnodes + 1) * sizeof *stack);
	if (!stack) {
		layout_free(&l);
		errno = ENOMEM;
		return -1;
	}
	size_t sp = 0;
	stack[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp];
		const struct fg_node *nd = &g->nodes[i];
		l.out_index[i] = emitted++;
		for (uint32_t k = l.start[i + 1]; k > l.start[i]; k--) {
			uint32_t c = l.kids[k - 1];
			if (l.out_index[c] != UINT32_MAX)
				stack[sp++] = c;
		}
		double fx = total > 0 ? l.x[i] / total : 0;
		double fw = total > 0 ? nd->bytes / total : (i ? 0 : 1);
		double px = FG_PAD + fx * avail, pw = fw * avail;
		double y = (double)h - FG_BOTTOM - (nd->depth + 1.0) * FG_FRAME_H;
		char fill[64];
		if (o.colour && g->psize &&
		    !o.colour(o.ctx, g->payloads + i * g->psize, fill,
			      sizeof fill))
			sanitize_colour(fill);
		else if (i)
			ap_fg_name_colour(g->names[nd->name], fill, sizeof fill);
		else
			snprintf(fill, sizeof fill, "rgb(190,190,200)");
		fprintf(out, "<g class=\"f\" data-p=\"%d\" data-x=\"%.12g\" "
			     "data-w=\"%.12g\" data-b=\"%.17g\" data-n=\"",
			i ? (int)l.out_index[nd->parent] : -1, fx, fw,
			nd->bytes);
		txt_xml_escape(out, g->names[nd->name], 0);
		fputs("\">", out);
		write_tooltip(g, &o, &l, i, out);
		fprintf(out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
			     "height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>",
			px, y, pw, FG_FRAME_H - 1, fill);
		fprintf(out, "<text x=\"%.2f\" y=\"%.0f\">", px + 3,
			y + FG_FRAME_H - 4.5);
		double fit = floor((pw - 6) / FG_CHAR_W);
		if (fit >= 3) {
			const char *name = g->names[nd->name];
			size_t n = (size_t)fit;
			txt_xml_escape(out, name,
					 txt_xml_chars(name) <= n ? 0 : n - 2);
		}
		fputs("</text></g>\n", out);
	}
	free(stack);
	layout_free(&l);
	fprintf(out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]>"
		     "</script>\n</svg>\n", fg_script);
	return ferror(out) ? -1 : 0;
}
