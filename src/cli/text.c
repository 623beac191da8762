/*
 * text.c: UTF-8 validation and the JSON, XML and folded escapers of text.h.
 * One validator serves all three, so a name is judged the same way in every
 * output; XML additionally refuses the two noncharacters it forbids.
 */
#include "text.h"

size_t txt_utf8_len(const unsigned char *s, uint32_t *cp)
{
	unsigned c = s[0];
	size_t n;
	uint32_t v, min;
	if (c < 0x80) {
		if (cp)
			*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	/* A NUL ends the string and fails the continuation test, so no read
	 * goes past it. */
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	if (cp)
		*cp = v;
	return n;
}

/* txt_utf8_len for XML: U+FFFE and U+FFFF are not XML characters. */
static size_t xml_len(const unsigned char *s, uint32_t *cp)
{
	size_t n = txt_utf8_len(s, cp);
	return n && (*cp == 0xfffe || *cp == 0xffff) ? 0 : n;
}

size_t txt_xml_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t chars = 0;
	while (*s) {
		uint32_t cp;
		size_t n = xml_len(s, &cp);
		s += n ? n : 1;
		chars++;
	}
	return chars;
}

void txt_json_escape(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', f);
	while (*s) {
		unsigned c = *s;
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc((int)c, f);
			s++;
		} else if (c < 0x20) {
			switch (c) {
			case '\n': fputs("\\n", f); break;
			case '\t': fputs("\\t", f); break;
			case '\r': fputs("\\r", f); break;
			case '\b': fputs("\\b", f); break;
			case '\f': fputs("\\f", f); break;
			default: fprintf(f, "\\u%04x", c); break;
			}
			s++;
		} else {
			size_t n = txt_utf8_len(s, NULL);
			if (n == 0) {
				fputs("\\ufffd", f);
				s++;
			} else {
				fwrite(s, 1, n, f);
				s += n;
			}
		}
	}
	fputc('"', f);
}

void txt_xml_escape(FILE *out, const char *str, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t chars = 0;
	while (*s) {
		if (max_chars && chars == max_chars) {
			fputs("..", out);
			return;
		}
		uint32_t cp;
		size_t n = xml_len(s, &cp);
		chars++;
		if (!n || (cp < 0x20 && cp != '\t' && cp != '\n')) {
			fputs("\xef\xbf\xbd", out); /* U+FFFD */
			s += n ? n : 1;
			continue;
		}
		switch (cp) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		case '\n': fputs("&#10;", out); break;
		case '\t': fputs("&#9;", out); break;
		default: fwrite(s, 1, n, out);
		}
		s += n;
	}
}

void txt_folded_frame(FILE *out, const char *name, bool first)
{
	const unsigned char *s = (const unsigned char *)(name ? name : "");
	if (first)
		while (*s == ' ')
			s++;
	if (!*s) {
		fputs("[unknown]", out);
		return;
	}
	for (; *s; s++) {
		unsigned c = *s;
		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		fputc((int)c, out);
	}
}
