/*
 * text.h: the CLI's one UTF-8 validator and the escapers built on it, one
 * per output format: JSON string literals, XML text (the flame graph's
 * SVG) and folded-stack frames. Symbol names come from binaries and
 * profiles we do not control, so every escaper turns any byte string into
 * well-formed output.
 */
#ifndef ALLOCPROF_CLI_TEXT_H
#define ALLOCPROF_CLI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Length (1..4) of the well-formed UTF-8 sequence at s, with its code point
 * in *cp (may be NULL); 0 when the bytes there are not one (overlong forms,
 * surrogates, beyond U+10FFFF, truncated). s must be NUL-terminated.
 */
size_t txt_utf8_len(const unsigned char *s, uint32_t *cp);

/*
 * Characters in s for txt_xml_escape's limit: code points, every byte
 * txt_xml_escape replaces counted as one.
 */
size_t txt_xml_chars(const char *s);

/*
 * s as a JSON string literal (with quotes): quote, backslash and control
 * characters escaped, each byte of invalid UTF-8 written as \ufffd.
 */
void txt_json_escape(FILE *f, const char *s);

/*
 * s XML-escaped (& < > " ' as entities, tab and newline as character
 * references), with each invalid UTF-8 byte and each character XML 1.0
 * forbids (controls other than tab and newline, U+FFFE, U+FFFF) replaced
 * by U+FFFD. At most max_chars characters are written (then ".." is
 * appended); max_chars 0 = unlimited. NULL writes nothing.
 */
void txt_xml_escape(FILE *out, const char *s, size_t max_chars);

/*
 * One frame of a folded line: ';' becomes ':', control characters
 * (newline included) become '?', an empty or NULL name becomes
 * "[unknown]"; leading spaces are dropped when first is true (a folded line
 * must not start with a space).
 */
void txt_folded_frame(FILE *out, const char *name, bool first);

#endif
