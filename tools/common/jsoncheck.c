// SPDX-License-Identifier: MIT
/*
 * jsoncheck.c - validate a JSON document and check that paths exist in it.
 *
 *   ut-jsoncheck FILE|- [PATH[:TYPE]]...
 *
 * PATH is dot-separated: names select object members, numbers select array
 * elements, "*" requires a non-empty array and checks the rest of the path
 * in every element. TYPE is one of object, array, string, number, bool,
 * null. Exit 0 when the document is valid JSON (one value, nothing after
 * it) and every path is there with its type; 1 otherwise, saying why on
 * stderr; 2 on bad usage. Used by the tools' checks, which must not depend
 * on anything outside the tree.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum jtype { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

static const char *const type_names[] = {
	"null", "bool", "number", "string", "array", "object"
};

struct jnode {
	enum jtype type;
	char *key;		/* member name when inside an object */
	struct jnode *child;	/* first element or member */
	struct jnode *next;
};

struct parser {
	const char *s;
	size_t pos, len;
	const char *err;
	int depth;
};

static void ws(struct parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]))
		p->pos++;
}

static int peek(struct parser *p)
{
	ws(p);
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static bool fail(struct parser *p, const char *why)
{
	if (!p->err)
		p->err = why;
	return false;
}

static bool lit(struct parser *p, const char *w)
{
	size_t n = strlen(w);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n))
		return fail(p, "bad literal");
	p->pos += n;
	return true;
}

static bool hex4(struct parser *p)
{
	int i;

	for (i = 0; i < 4; i++, p->pos++)
		if (p->pos >= p->len || !strchr("0123456789abcdefABCDEF",
						p->s[p->pos]) || !p->s[p->pos])
			return fail(p, "bad \\u escape");
	return true;
}

/* Parses a string; *out (if non-NULL) gets a copy without unescaping. */
static bool string(struct parser *p, char **out)
{
	size_t start;

	if (peek(p) != '"')
		return fail(p, "expected string");
	start = ++p->pos;
	while (p->pos < p->len && p->s[p->pos] != '"') {
		unsigned char c = (unsigned char)p->s[p->pos];

		if (c < 0x20)
			return fail(p, "control character in string");
		p->pos++;
		if (c == '\\') {
			if (p->pos >= p->len)
				break;
			c = (unsigned char)p->s[p->pos++];
			if (c == 'u') {
				if (!hex4(p))
					return false;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return fail(p, "bad escape");
			}
		}
	}
	if (p->pos >= p->len)
		return fail(p, "unterminated string");
	if (out) {
		*out = strndup(p->s + start, p->pos - start);
		if (!*out)
			return fail(p, "out of memory");
	}
	p->pos++;
	return true;
}

static bool digits(struct parser *p)
{
	size_t start = p->pos;

	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
		p->pos++;
	return p->pos > start;
}

static bool number(struct parser *p)
{
	if (p->s[p->pos] == '-')
		p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '0')
		p->pos++;
	else if (!digits(p))
		return fail(p, "bad number");
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (!digits(p))
			return fail(p, "bad fraction");
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && strchr("+-", p->s[p->pos]) &&
		    p->s[p->pos])
			p->pos++;
		if (!digits(p))
			return fail(p, "bad exponent");
	}
	return true;
}

static struct jnode *value(struct parser *p);

/* Elements of an array or members of an object, up to the closing mark. */
static bool items(struct parser *p, struct jnode *n, bool obj)
{
	struct jnode **tail = &n->child;
	char close = obj ? '}' : ']';

	p->pos++;
	if (peek(p) == close) {
		p->pos++;
		return true;
	}
	for (;;) {
		char *key = NULL;
		struct jnode *c;

		if (obj) {
			if (!string(p, &key))
				return false;
			if (peek(p) != ':') {
				free(key);
				return fail(p, "expected ':'");
			}
			p->pos++;
		}
		c = value(p);
		if (!c) {
			free(key);
			return false;
		}
		c->key = key;
		*tail = c;
		tail = &c->next;
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) != close)
			return fail(p, obj ? "expected ',' or '}'"
					   : "expected ',' or ']'");
		p->pos++;
		return true;
	}
}

static struct jnode *value(struct parser *p)
{
	struct jnode *n;
	int c = peek(p);
	bool ok;

	if (++p->depth > 256) {
		fail(p, "nested too deep");
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		fail(p, "out of memory");
		return NULL;
	}
	switch (c) {
	case '{':
		n->type = J_OBJECT;
		ok = items(p, n, true);
		break;
	case '[':
		n->type = J_ARRAY;
		ok = items(p, n, false);
		break;
	case '"':
		n->type = J_STRING;
		ok = string(p, NULL);
		break;
	case 't':
		n->type = J_BOOL;
		ok = lit(p, "true");
		break;
	case 'f':
		n->type = J_BOOL;
		ok = lit(p, "false");
		break;
	case 'n':
		n->type = J_NULL;
		ok = lit(p, "null");
		break;
	default:
		n->type = J_NUMBER;
		ok = (c == '-' || (c >= '0' && c <= '9')) ? number(p)
			: fail(p, "expected a value");
	}
	p->depth--;
	/* Nodes are not freed on failure: the program exits right after. */
	return ok ? n : NULL;
}

static bool is_index(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

static bool check_path(const struct jnode *n, const char *path,
		       const char *type, const char *full)
{
	const char *dot;
	const struct jnode *c;
	size_t len;

	if (!*path) {
		if (type && strcmp(type, type_names[n->type])) {
			fprintf(stderr, "%s: is %s, not %s\n", full,
				type_names[n->type], type);
			return false;
		}
		return true;
	}
	dot = strchr(path, '.');
	len = dot ? (size_t)(dot - path) : strlen(path);
	if (len == 1 && *path == '*') {
		if (n->type != J_ARRAY || !n->child) {
			fprintf(stderr, "%s: '*' needs a non-empty array\n",
				full);
			return false;
		}
		for (c = n->child; c; c = c->next)
			if (!check_path(c, dot ? dot + 1 : "", type, full))
				return false;
		return true;
	}
	if (n->type == J_ARRAY && is_index(path, len)) {
		unsigned long i = strtoul(path, NULL, 10);

		for (c = n->child; c && i; c = c->next)
			i--;
	} else if (n->type == J_OBJECT) {
		for (c = n->child; c; c = c->next)
			if (strlen(c->key) == len && !memcmp(c->key, path, len))
				break;
	} else {
		c = NULL;
	}
	if (!c) {
		fprintf(stderr, "%s: missing at '%.*s'\n", full, (int)len,
			path);
		return false;
	}
	return check_path(c, dot ? dot + 1 : "", type, full);
}

static char *slurp(const char *name, size_t *len)
{
	FILE *f = strcmp(name, "-") ? fopen(name, "r") : stdin;
	size_t cap = 65536, n = 0;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	struct parser p = { 0 };
	struct jnode *root;
	int i, bad = 0;

	if (argc < 2 || !strcmp(argv[1], "--help")) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: ut-jsoncheck FILE|- [PATH[:TYPE]]...\n");
		return argc < 2 ? 2 : 0;
	}
	p.s = slurp(argv[1], &p.len);
	if (!p.s) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	root = value(&p);
	if (root && peek(&p) != -1)
		fail(&p, "text after the document");
	if (!root || p.err) {
		fprintf(stderr, "%s: invalid JSON at byte %zu: %s\n", argv[1],
			p.pos, p.err ? p.err : "?");
		return 1;
	}
	for (i = 2; i < argc; i++) {
		char *path = strdup(argv[i]), *type;

		if (!path)
			return 1;
		type = strchr(path, ':');
		if (type)
			*type++ = '\0';
		if (!check_path(root, path, type, argv[i]))
			bad++;
		free(path);
	}
	return bad ? 1 : 0;
}
