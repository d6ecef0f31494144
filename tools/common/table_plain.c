// SPDX-License-Identifier: MIT
/*
 * table_plain.c - the ut_table_* calls without libsmartcols, for static
 * programs (build/libut-static.a): Debian ships no static libsmartcols, and
 * the VM rig's initramfs has no shared libraries. Columns are padded to
 * their widest cell and separated by one blank, as libsmartcols prints
 * them when stdout is not a terminal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ut.h"

/* Opaque in ut.h: this file gives it its own body. */
struct libscols_table {
	int ncols;
	unsigned int right;
	unsigned int hidden;	/* ut_table_col_hide's columns */
	char **cells;		/* row-major, the header is row 0 */
	size_t nrows, cap;
};

void ut_table_free(struct libscols_table *tb)
{
	size_t i;

	if (!tb)
		return;
	for (i = 0; i < tb->nrows * (size_t)tb->ncols; i++)
		free(tb->cells[i]);
	free(tb->cells);
	free(tb);
}

int ut_table_row(struct libscols_table *tb, const char *const *cells)
{
	size_t base = tb->nrows * (size_t)tb->ncols;
	int i;

	if (tb->nrows == tb->cap) {
		size_t cap = tb->cap ? tb->cap * 2 : 8;
		char **p = realloc(tb->cells, cap * (size_t)tb->ncols *
					      sizeof(*p));

		if (!p)
			return -ENOMEM;
		tb->cells = p;
		tb->cap = cap;
	}
	for (i = 0; i < tb->ncols; i++)
		tb->cells[base + (size_t)i] = strdup(cells[i] ? cells[i] : "");
	tb->nrows++;
	for (i = 0; i < tb->ncols; i++)
		if (!tb->cells[base + (size_t)i])
			return -ENOMEM;
	return 0;
}

struct libscols_table *ut_table_new(const char *const *cols, int ncols,
				    unsigned int right_mask)
{
	struct libscols_table *tb;

	if (ncols < 1 || ncols > 32)
		return NULL;
	tb = calloc(1, sizeof(*tb));
	if (!tb)
		return NULL;
	tb->ncols = ncols;
	tb->right = right_mask;
	if (ut_table_row(tb, cols)) {
		ut_table_free(tb);
		return NULL;
	}
	return tb;
}

int ut_table_ncols(const struct libscols_table *tb)
{
	return tb->ncols;
}

static void print_row(const struct libscols_table *tb, size_t r,
		      const int *width)
{
	int i, lastcol = tb->ncols - 1;

	while (lastcol > 0 && (tb->hidden & (1u << lastcol)))
		lastcol--;
	for (i = 0; i <= lastcol; i++) {
		const char *c = tb->cells[r * (size_t)tb->ncols + (size_t)i];
		bool right = i < 32 && (tb->right & (1u << i));
		bool last = i == lastcol;

		if (i < 32 && (tb->hidden & (1u << i)))
			continue;
		if (right)
			printf("%*s", width[i], c);
		else
			printf("%-*s", last ? 0 : width[i], c);
		putchar(last ? '\n' : ' ');
	}
}

int ut_table_col_width(struct libscols_table *tb, int i)
{
	int w = 0;

	for (size_t r = 0; r < tb->nrows; r++) {
		int c = (int)strlen(tb->cells[r * (size_t)tb->ncols +
					      (size_t)i]);

		if (c > w)
			w = c;
	}
	return w;
}

const char *ut_table_col_name(struct libscols_table *tb, int i)
{
	return tb->cells[i];
}

void ut_table_col_hide(struct libscols_table *tb, int i)
{
	if (i < 32)
		tb->hidden |= 1u << i;
}

int ut_table_print(struct libscols_table *tb)
{
	int width[32] = { 0 };
	size_t r;
	int i;

	for (r = 0; r < tb->nrows; r++)
		for (i = 0; i < tb->ncols && i < 32; i++) {
			int w = (int)strlen(tb->cells[r * (size_t)tb->ncols +
						      (size_t)i]);

			if (w > width[i])
				width[i] = w;
		}
	/* Row 0 is the header; with no row under it print nothing, as
	 * libsmartcols does, so both builds of a tool say the same. */
	for (r = 0; tb->nrows > 1 && r < tb->nrows; r++)
		print_row(tb, r, width);
	fflush(stdout);
	ut_table_free(tb);
	return ferror(stdout) ? -EIO : 0;
}
