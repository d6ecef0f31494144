// SPDX-License-Identifier: MIT
/*
 * table_fit.c - a table in a given number of columns: whole columns
 * hidden by priority rather than lines cut mid-word (umtop's screen).
 */
#include <stdio.h>
#include <string.h>

#include "ut.h"

/* Columns shown, a blank between each two. */
static int table_width(const int *w, const bool *hid, int n)
{
	int sum = 0, shown = 0;

	for (int i = 0; i < n; i++)
		if (!hid[i]) {
			sum += w[i];
			shown++;
		}
	return shown ? sum + shown - 1 : 0;
}

/* The shown column to hide next: lowest priority, rightmost of equals. */
static int next_victim(const unsigned char *prio, const bool *hid, int n)
{
	int v = -1;

	for (int i = 0; i < n; i++)
		if (!hid[i] && (v < 0 || prio[i] <= prio[v]))
			v = i;
	return v;
}

int ut_table_print_fit(struct libscols_table *tb, int width,
		       const unsigned char *prio, char *hidden, size_t hlen)
{
	int n = ut_table_ncols(tb), w[32], left = n;
	bool hid[32] = { false };

	if (n > 32)
		n = 32;
	for (int i = 0; i < n; i++)
		w[i] = ut_table_col_width(tb, i);
	while (width > 0 && left > 1 && table_width(w, hid, n) > width) {
		int v = next_victim(prio, hid, n);
		size_t used = strlen(hidden);

		hid[v] = true;
		left--;
		ut_table_col_hide(tb, v);
		snprintf(hidden + used, hlen - used, "%s%s", used ? " " : "",
			 ut_table_col_name(tb, v));
	}
	return ut_table_print(tb);
}
