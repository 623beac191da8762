/*
 * dwlambda.c: names for the lambdas GCC's DWARF leaves nameless (see
 * dwlambda.h).
 *
 * The walk descends what can hold a closure type: the unit, namespaces,
 * functions (abstract instances too: a lambda of an inlined function has
 * its closure type in the function's abstract DIE), lexical blocks, and
 * the anonymous structures and classes inside functions, which are the
 * closure types; named types are stepped over (dwarf_siblingof jumps over
 * their children). Each operator() found in a closure type is recorded
 * with the function around the type. The walk is iterative, so deeply
 * nested DWARF cannot overflow the stack.
 */
#define _GNU_SOURCE
#include "dwlambda.h"

#include <dwarf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

#define MAX_LEVELS 256
#define MAX_TYPE_DEPTH 8
#define SIG_CAP 512

struct lam {
	Dwarf_Off op;    /* the operator() DIE in the closure type */
	Dwarf_Off closure; /* the closure type */
	bool first;        /* the closure's first operator() recorded */
	Dwarf_Die outer; /* the function defining the lambda */
	Dwarf_Off outer_off;
	char *name;      /* "operator()", or a generic one's "operator()<int>" */
	char *sig;       /* parameter types, as the demangler lists them */
	bool is_const;   /* not mutable: operator() const */
	unsigned num;    /* among the outer function's lambdas of this sig */
};

struct dwl_map {
	struct lam *v;
	size_t n, cap;
	bool by_sig; /* numbered among the same signature, else all alike */
};

void dwl_free(dwl_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].sig);
		free(m->v[i].name);
	}
	free(m->v);
	free(m);
}

/* Append s to b (cap SIG_CAP); false when it does not fit. */
static bool put(char *b, size_t *len, const char *s)
{
	size_t k = strlen(s);
	if (*len + k >= SIG_CAP)
		return false;
	memcpy(b + *len, s, k + 1);
	*len += k;
	return true;
}

static bool type_ref(Dwarf_Die *d, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(d, DW_AT_type, &a) && dwarf_formref_die(&a, out);
}

/* The name of type t as the demangler writes it (int const&, char**); a
 * class by its own DWARF name. False for what it cannot name. */
static bool type_str(Dwarf_Die *t, char *b, size_t *len, int depth)
{
	Dwarf_Die in;
	bool has = type_ref(t, &in);
	if (depth > MAX_TYPE_DEPTH)
		return false;
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type:
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_typedef: {
		const char *name = dwarf_diename(t);
		return name && put(b, len, name);
	}
	case DW_TAG_pointer_type:
		return (has ? type_str(&in, b, len, depth + 1) : put(b, len, "void")) &&
		       put(b, len, "*");
	case DW_TAG_reference_type:
		return has && type_str(&in, b, len, depth + 1) && put(b, len, "&");
	case DW_TAG_rvalue_reference_type:
		return has && type_str(&in, b, len, depth + 1) && put(b, len, "&&");
	case DW_TAG_const_type:
		return (has ? type_str(&in, b, len, depth + 1) : put(b, len, "void")) &&
		       put(b, len, " const");
	case DW_TAG_volatile_type:
		return (has ? type_str(&in, b, len, depth + 1) : put(b, len, "void")) &&
		       put(b, len, " volatile");
	default:
		return false;
	}
}

static bool flag(Dwarf_Die *d, int name)
{
	Dwarf_Attribute a;
	bool v = false;
	return dwarf_attr_integrate(d, name, &a) && dwarf_formflag(&a, &v) == 0 && v;
}

/*
 * The signature of operator() DIE op: its parameters' types, comma
 * separated ("?" for one that cannot be named), and whether the closure
 * it is called on is const (the artificial object pointer's pointee).
 */
static char *signature(Dwarf_Die *op, bool *is_const)
{
	char b[SIG_CAP];
	size_t len = 0;
	bool first = true;
	b[0] = '\0';
	*is_const = false;
	Dwarf_Die c;
	if (dwarf_child(op, &c) != 0)
		return strdup("");
	/* a generic lambda's operator() is a template over its auto
	 * parameters, whose template parameters GCC names "auto:1", ...:
	 * the signature names them so, not the instance's types */
	struct auto_param {
		Dwarf_Off type;
		const char *name;
	} autos[8];
	size_t nautos = 0;
	Dwarf_Die t0 = c, t;
	do {
		const char *an = dwarf_diename(&t0);
		if (dwarf_tag(&t0) == DW_TAG_template_type_parameter && an &&
		    strncmp(an, "auto:", 5) == 0 && nautos < 8 && type_ref(&t0, &t))
			autos[nautos++] = (struct auto_param){dwarf_dieoffset(&t), an};
	} while (dwarf_siblingof(&t0, &t0) == 0);
	do {
		if (dwarf_tag(&c) != DW_TAG_formal_parameter)
			continue;
		Dwarf_Die p;
		if (flag(&c, DW_AT_artificial)) {
			/* this: [const] pointer to [const] closure */
			if (type_ref(&c, &t)) {
				if (dwarf_tag(&t) == DW_TAG_const_type && !type_ref(&t, &t))
					continue;
				if (dwarf_tag(&t) == DW_TAG_pointer_type && type_ref(&t, &p))
					*is_const = dwarf_tag(&p) == DW_TAG_const_type;
			}
			continue;
		}
		size_t mark = len;
		const char *auto_name = NULL;
		if (type_ref(&c, &t))
			for (size_t i = 0; i < nautos && !auto_name; i++)
				if (autos[i].type == dwarf_dieoffset(&t))
					auto_name = autos[i].name;
		if ((!first && !put(b, &len, ", ")) || !type_ref(&c, &t) ||
		    !(auto_name ? put(b, &len, auto_name) : type_str(&t, b, &len, 0))) {
			len = mark;
			b[len] = '\0';
			if (!put(b, &len, first ? "?" : ", ?"))
				break;
		}
		first = false;
	} while (dwarf_siblingof(&c, &c) == 0);
	return strdup(b);
}

/* Record operator() op of the closure type at offset closure, defined in
 * function outer. The number belongs to the closure: a generic lambda's
 * several operator() instances share it. */
static int record(dwl_map *m, Dwarf_Die *op, Dwarf_Off closure, Dwarf_Die *outer)
{
	if (ap_cli_grow((void **)&m->v, &m->cap, m->n + 1, sizeof *m->v))
		return -1;
	struct lam *l = &m->v[m->n];
	l->sig = signature(op, &l->is_const);
	if (!l->sig)
		return -1;
	l->name = strdup(dwarf_diename(op));
	if (!l->name) {
		free(l->sig);
		return -1;
	}
	l->op = dwarf_dieoffset(op);
	l->closure = closure;
	l->outer = *outer;
	l->outer_off = dwarf_dieoffset(outer);
	l->num = 1;
	l->first = true;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].closure == closure) {
			l->num = m->v[i].num;
			l->first = false;
			break;
		}
	for (size_t i = 0; l->first && i < m->n; i++) {
		const struct lam *p = &m->v[i];
		if (p->first && p->outer_off == l->outer_off &&
		    (!m->by_sig || strcmp(p->sig, l->sig) == 0))
			l->num++;
	}
	m->n++;
	return 0;
}

/*
 * How the compiler of unit cu numbers lambdas. The Itanium C++ ABI counts
 * them among the closures of the same signature in the same scope, as
 * clang does and GCC from version 13 (ABI version 18); GCC before 13
 * counted every lambda of the scope, whatever its signature. GCC names
 * itself and its version in DW_AT_producer ("GNU C++17 12.2.0 -O2 ...";
 * "GNU GIMPLE 12.2.0 ..." for code compiled at link time with -flto),
 * with -fabi-version=N when the option was given.
 */
static bool numbers_by_signature(Dwarf_Die *cu)
{
	Dwarf_Attribute a;
	const char *p = dwarf_attr(cu, DW_AT_producer, &a) ? dwarf_formstring(&a) : NULL;
	/* "GNU C++17 12.2.0 ...", or "GNU GIMPLE 12.2.0 ..." for a unit
	 * GCC wrote at link time (-flto) */
	if (!p || strncmp(p, "GNU ", 4) != 0)
		return true;
	const char *v = strchr(p, ' ');
	v = v ? strchr(v + 1, ' ') : NULL; /* past "GNU C++17" */
	if (!v || v[1] < '0' || v[1] > '9')
		return true;
	long major = strtol(v + 1, NULL, 10);
	const char *abi = strstr(p, "-fabi-version=");
	long abiv = abi ? strtol(abi + 14, NULL, 10) : 0;
	if (abiv > 0) /* 0 means the latest */
		return abiv >= 18;
	return major >= 13;
}

/* A level of the walk: the children of one DIE. */
struct level {
	Dwarf_Die next;
	Dwarf_Die outer; /* the function around them (valid if has_outer) */
	bool has_outer;
	bool closure; /* they are the members of a closure type ... */
	Dwarf_Off closure_off; /* ... at this offset */
};

dwl_map *dwl_build(Dwarf_Die *cu)
{
	dwl_map *m = calloc(1, sizeof *m);
	struct level *lv = malloc(MAX_LEVELS * sizeof *lv);
	if (!m || !lv)
		goto fail;
	m->by_sig = numbers_by_signature(cu);
	int top = 0;
	if (dwarf_child(cu, &lv[0].next) != 0) {
		free(lv);
		return m; /* an empty unit */
	}
	lv[0].has_outer = false;
	lv[0].closure = false;
	lv[0].closure_off = 0;
	while (top >= 0) {
		struct level *l = &lv[top];
		Dwarf_Die d = l->next;
		int more = dwarf_siblingof(&d, &l->next);
		if (more < 0)
			goto fail;
		int tag = dwarf_tag(&d);
		bool descend = false, closure = false;
		Dwarf_Die outer = l->outer;
		bool has_outer = l->has_outer;
		switch (tag) {
		case DW_TAG_namespace:
		case DW_TAG_lexical_block:
			descend = true;
			break;
		case DW_TAG_subprogram:
			if (l->closure && l->has_outer) {
				const char *name = dwarf_diename(&d);
				if (name && strncmp(name, "operator()", 10) == 0 &&
				    (name[10] == '\0' || name[10] == '<') &&
				    record(m, &d, l->closure_off, &l->outer) != 0)
					goto fail;
			}
			/* lambdas inside it are its own */
			descend = true;
			outer = d;
			has_outer = true;
			break;
		case DW_TAG_structure_type:
		case DW_TAG_class_type:
			closure = descend = l->has_outer && !dwarf_hasattr(&d, DW_AT_name);
			break;
		default:
			break;
		}
		if (more > 0)
			top--; /* this level is over once d is dealt with */
		Dwarf_Die child;
		if (descend && dwarf_haschildren(&d) && dwarf_child(&d, &child) == 0) {
			if (top + 1 >= MAX_LEVELS)
				continue; /* too deep: not descended */
			struct level *n = &lv[++top];
			n->next = child;
			n->outer = outer;
			n->has_outer = has_outer;
			n->closure = closure;
			n->closure_off = dwarf_dieoffset(&d);
		}
	}
	free(lv);
	return m;
fail:
	free(lv);
	dwl_free(m);
	return NULL;
}

char *dwl_suffix(const dwl_map *m, Dwarf_Die *fn, Dwarf_Die *outer)
{
	Dwarf_Off off = dwarf_dieoffset(fn);
	for (size_t i = 0; i < m->n; i++) {
		const struct lam *l = &m->v[i];
		if (l->op != off)
			continue;
		*outer = l->outer;
		char *s = NULL;
		if (asprintf(&s, "::{lambda(%s)#%u}::%s(%s)%s", l->sig, l->num, l->name,
			     l->sig, l->is_const ? " const" : "") < 0)
			return NULL;
		return s;
	}
	return NULL;
}
