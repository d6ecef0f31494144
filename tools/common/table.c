// SPDX-License-Identifier: MIT
/*
 * table.c - libsmartcols tables with the look of util-linux's tools.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libsmartcols/libsmartcols.h>

#include "ut.h"

struct libscols_table *ut_table_new(const char *const *cols, int ncols,
				    unsigned int right_mask)
{
	struct libscols_table *tb = scols_new_table();
	int i;

	if (!tb)
		return NULL;
	for (i = 0; i < ncols; i++) {
		int fl = (i < 32 && (right_mask & (1u << i))) ? SCOLS_FL_RIGHT
							       : 0;

		if (!scols_table_new_column(tb, cols[i], 0, fl)) {
			scols_unref_table(tb);
			return NULL;
		}
	}
	return tb;
}

int ut_table_row(struct libscols_table *tb, const char *const *cells)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	size_t i, n = scols_table_get_ncols(tb);

	if (!ln)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (cells[i] && scols_line_set_data(ln, i, cells[i]))
			return -ENOMEM;
	return 0;
}

int ut_table_ncols(const struct libscols_table *tb)
{
	return (int)scols_table_get_ncols(tb);
}

int ut_table_print(struct libscols_table *tb)
{
	int rc = scols_print_table(tb);

	fflush(stdout);
	scols_unref_table(tb);
	return rc ? -EIO : 0;
}

void ut_table_free(struct libscols_table *tb)
{
	scols_unref_table(tb);
}

static int cell_width(struct libscols_cell *ce)
{
	const char *d = ce ? scols_cell_get_data(ce) : NULL;

	return d ? (int)strlen(d) : 0;
}

int ut_table_col_width(struct libscols_table *tb, int i)
{
	struct libscols_column *cl = scols_table_get_column(tb, (size_t)i);
	size_t n = scols_table_get_nlines(tb);
	int w = cell_width(scols_column_get_header(cl));

	for (size_t r = 0; r < n; r++) {
		struct libscols_line *ln = scols_table_get_line(tb, r);
		int c = cell_width(scols_line_get_cell(ln, (size_t)i));

		if (c > w)
			w = c;
	}
	return w;
}

const char *ut_table_col_name(struct libscols_table *tb, int i)
{
	struct libscols_column *cl = scols_table_get_column(tb, (size_t)i);

	return scols_cell_get_data(scols_column_get_header(cl));
}

void ut_table_col_hide(struct libscols_table *tb, int i)
{
	struct libscols_column *cl = scols_table_get_column(tb, (size_t)i);

	scols_column_set_flags(cl, scols_column_get_flags(cl) |
			       SCOLS_FL_HIDDEN);
}
