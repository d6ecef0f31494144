// SPDX-License-Identifier: MIT
/*
 * umtop - a live view of umm.ko: node levels and free memory with its rate
 * of decline, GPU budgets, the module's counters as rates, the clients and
 * the watched memory cgroups.
 *
 * Each sample reads the whole sysfs tree (and the debugfs client and cgroup
 * tables when it can); rates are the difference from the previous sample over the time
 * between them. On a terminal the screen is redrawn with plain ANSI
 * escapes on the alternate screen, fitted to the terminal's size (whole
 * columns and sections left out, never a word cut) and redrawn when it
 * changes; q ends it. -b prints samples one after the other, --json one JSON object
 * per line. A module that goes away (rmmod, a reload) is waited for: the
 * session goes on when it is back. Exit status: 0, 1 when umm.ko cannot be
 * read at the first sample, 2 bad usage.
 * See umtop(8).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ut.h"

/* The counters shown as rates, as indexes of struct ut_umm's g[]. */
static const int rated[] = {
	UT_UMM_G_events_sent, UT_UMM_G_events_dropped, UT_UMM_G_overflows,
	UT_UMM_G_acks, UT_UMM_G_bytes_freed, UT_UMM_G_shrinker_calls,
	UT_UMM_G_oom_calls,
};
#define NRATED (sizeof(rated) / sizeof(rated[0]))

struct opts {
	const char *root;
	double delay;		/* seconds between samples */
	uint64_t count;		/* 0: until interrupted */
	bool batch;
	bool json;
};

/* One sample and what is derived from the one before. */
struct sample {
	struct ut_umm s;
	int clients_err;	/* 0, or why the client table is missing */
	struct ut_umm_client *c;
	size_t nc;
	int cgroups_err;	/* the same for the cgroup table */
	struct ut_umm_cgroup *cg;
	size_t ncg;
	double dt;		/* seconds since the previous sample; 0 first */
	double rate[NRATED];	/* per second; NaN on the first sample */
	double *decline;	/* per node, bytes per second; NaN unknown */
};

static volatile sig_atomic_t stop, resized;

static void on_signal(int sig)
{
	stop = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

/* Free memory lost per second by node id, against the previous sample. */
static double node_decline(const struct ut_umm *prev,
			   const struct ut_umm_node *n, double dt)
{
	size_t i;

	for (i = 0; prev && dt > 0 && i < prev->nnodes; i++)
		if (prev->nodes[i].id == n->id)
			return ((double)prev->nodes[i].v[UT_UMM_N_free_bytes] -
				(double)n->v[UT_UMM_N_free_bytes]) / dt;
	return NAN;
}

static int derive(struct sample *cur, const struct sample *prev)
{
	size_t i;

	cur->dt = prev ? (double)(cur->s.t_ns - prev->s.t_ns) / 1e9 : 0;
	for (i = 0; i < NRATED; i++) {
		double d = prev ? (double)cur->s.g[rated[i]] -
				  (double)prev->s.g[rated[i]] : 0;

		/* a reload resets the counters: no rate across it */
		cur->rate[i] = prev && cur->dt > 0 && d >= 0 ? d / cur->dt : NAN;
	}
	cur->decline = calloc(cur->s.nnodes ? cur->s.nnodes : 1,
			      sizeof(double));
	if (!cur->decline)
		return -ENOMEM;
	for (i = 0; i < cur->s.nnodes; i++)
		cur->decline[i] = node_decline(prev ? &prev->s : NULL,
					       &cur->s.nodes[i], cur->dt);
	return 0;
}

static void sample_free(struct sample *x)
{
	ut_umm_free(&x->s);
	free(x->c);
	free(x->cg);
	free(x->decline);
	memset(x, 0, sizeof(*x));
}

static int by_room_path(const void *a, const void *b)
{
	const struct ut_umm_cgroup *x = a, *y = b;

	if (x->room != y->room)
		return x->room < y->room ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * 0, or the error of the module's tree (the debugfs tables may be
 * missing). The cgroups least room first: the ones that matter stay on a
 * screen too small for all of them.
 */
static int take(const struct opts *o, struct sample *cur,
		const struct sample *prev)
{
	int ret;

	memset(cur, 0, sizeof(*cur));
	ret = ut_umm_read(o->root, &cur->s);
	if (ret)
		return ret;
	cur->clients_err = ut_umm_clients(o->root, &cur->c, &cur->nc);
	cur->cgroups_err = ut_umm_cgroups(o->root, &cur->cg, &cur->ncg);
	if (cur->ncg)
		qsort(cur->cg, cur->ncg, sizeof(*cur->cg), by_room_path);
	return derive(cur, prev);
}

/* ---- output --------------------------------------------------------------- */

static void print_json(const struct sample *x)
{
	struct timespec now;
	struct ut_json j;
	size_t i;

	clock_gettime(CLOCK_REALTIME, &now);
	ut_json_init_line(&j, stdout);
	ut_json_obj_begin(&j, NULL);
	ut_json_u64(&j, "time_ms", (uint64_t)now.tv_sec * 1000 +
		    (uint64_t)now.tv_nsec / 1000000);
	ut_json_dbl(&j, "interval_s", x->dt > 0 ? x->dt : NAN);
	ut_umm_json(&j, &x->s, x->decline);
	ut_json_obj_begin(&j, "rates_per_s");
	for (i = 0; i < NRATED; i++)
		ut_json_dbl(&j, ut_umm_global_names[rated[i]], x->rate[i]);
	ut_json_obj_end(&j);
	if (x->clients_err)
		ut_json_null(&j, "clients");
	else
		ut_umm_json_clients(&j, "clients", x->c, x->nc);
	if (x->cgroups_err)
		ut_json_null(&j, "cgroups");
	else
		ut_umm_json_cgroups(&j, "cgroups", x->cg, x->ncg);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
}

/* "12.5/s", or "-" before a rate is known. */
static const char *rate_text(double r, char *buf, size_t len)
{
	if (isnan(r))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f/s", r);
	return buf;
}

static void print_header(const struct opts *o, const struct sample *x)
{
	const uint64_t *g = x->s.g;
	char a[16], b[16], c[16], d[16], e[16], f[16], sz[UT_SIZE_STR];
	char rb[UT_SIZE_STR], rmax[UT_SIZE_STR];
	time_t t = time(NULL);
	char when[32];

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
	printf("umtop - %s  umm.ko API %llu, events %s, %llu clients, every %.1f s\n",
	       when, (unsigned long long)g[UT_UMM_G_api_version],
	       g[UT_UMM_G_enabled] ? "enabled" : "disabled",
	       (unsigned long long)g[UT_UMM_G_clients], o->delay);
	printf("rings %s (ring_bytes_max %s)\n",
	       ut_size_str(g[UT_UMM_G_ring_bytes], rb),
	       ut_size_str(g[UT_UMM_G_ring_bytes_max], rmax));
	printf("events %s sent, %s dropped, %s overflows; acks %s, %s/s freed\n",
	       rate_text(x->rate[0], a, 16), rate_text(x->rate[1], b, 16),
	       rate_text(x->rate[2], c, 16), rate_text(x->rate[3], d, 16),
	       isnan(x->rate[4]) ? "-" : ut_size_str((uint64_t)x->rate[4], sz));
	printf("shrinker %s, OOM %s; ack latency avg %.3f ms, max %.3f ms\n\n",
	       rate_text(x->rate[5], e, 16), rate_text(x->rate[6], f, 16),
	       (double)g[UT_UMM_G_ack_latency_ns_avg] / 1e6,
	       (double)g[UT_UMM_G_ack_latency_ns_max] / 1e6);
}

static void print_gpus(const struct sample *x)
{
	ut_umm_print_gpus(&x->s, false);
}

static void print_clients(const struct sample *x)
{
	if (x->clients_err)
		printf("clients: %s\n", x->clients_err == -ENODEV ?
		       "debugfs not mounted" : strerror(-x->clients_err));
	else if (x->nc)
		ut_umm_print_clients(x->c, x->nc);
	else
		printf("no clients\n");
}

/* a section only where there is one: no module, no debugfs, none */
static void print_cgroups(const struct sample *x)
{
	if (!x->cgroups_err && x->ncg) {
		printf("cgroups: %zu watched, least room first\n", x->ncg);
		ut_umm_print_cgroups(x->cg, x->ncg);
	}
}

static void print_body(const struct opts *o, const struct sample *x)
{
	print_header(o, x);
	ut_umm_print_nodes(&x->s, x->decline);
	putchar('\n');
	if (!ut_umm_print_gpus(&x->s, false))
		putchar('\n');
	print_clients(x);
	if (!x->cgroups_err && x->ncg)
		putchar('\n');
	print_cgroups(x);
}

/* ---- the full screen ----------------------------------------------------- */

/* A section of the screen: its lines, without their newlines. */
struct lines {
	char *buf;
	char *v[256];
	unsigned int n;
};

/* What fn(x) prints to stdout, as lines (stdout points to memory meanwhile). */
static void render(struct lines *l, void (*fn)(const struct sample *),
		   const struct sample *x)
{
	FILE *real = stdout, *mem;
	size_t len = 0;
	char *save = NULL, *line;

	memset(l, 0, sizeof(*l));
	mem = open_memstream(&l->buf, &len);
	if (!mem)
		return;
	stdout = mem;
	fn(x);
	fflush(mem);
	stdout = real;
	fclose(mem);
	for (line = strtok_r(l->buf, "\n", &save); line && l->n < 256;
	     line = strtok_r(NULL, "\n", &save))
		l->v[l->n++] = line;
}

/*
 * line in at most cols columns, cut after a whole word (at the last blank
 * that lets it fit) rather than inside one; the length to print.
 */
static int fit_words(const char *line, unsigned int cols)
{
	int len = (int)strlen(line), cut;

	if (len <= (int)cols)
		return len;
	for (cut = (int)cols; cut > 0 && line[cut] != ' '; cut--)
		;
	while (cut > 0 && (line[cut - 1] == ' ' || line[cut - 1] == ','))
		cut--;
	return cut > 0 ? cut : (int)cols;
}

static const struct opts *screen_opts;

static void sec_header(const struct sample *x)
{
	print_header(screen_opts, x);
}

static void sec_nodes(const struct sample *x)
{
	ut_umm_print_nodes(&x->s, x->decline);
}

enum { S_HEAD, S_NODES, S_GPUS, S_CLIENTS, S_CGROUPS, S_COUNT };

/* The rows a frame takes with sections in (and a blank between two). */
static unsigned int frame_rows(const struct lines *sec, const bool *in,
			       bool blanks)
{
	unsigned int rows = 0, shown = 0;

	for (int i = 0; i < S_COUNT; i++)
		if (in[i] && sec[i].n) {
			rows += sec[i].n;
			shown++;
		}
	return rows + (blanks && shown ? shown - 1 : 0);
}

/*
 * Which sections a screen of rows lines shows, as top does when it is
 * short: first the counters under the title go (the title stays), then
 * the blank lines, then the GPUs; then the client table is cut, so that
 * the memory cgroups stay in view. Returns the client lines to leave out.
 */
static unsigned int plan(struct lines *sec, bool *in, bool *blanks,
			 unsigned int rows)
{
	unsigned int need, over;

	if (frame_rows(sec, in, *blanks) <= rows)
		return 0;
	if (sec[S_HEAD].n > 1)
		sec[S_HEAD].n = 1;	/* the title line only */
	if (frame_rows(sec, in, *blanks) <= rows)
		return 0;
	*blanks = false;
	if (frame_rows(sec, in, *blanks) <= rows)
		return 0;
	in[S_GPUS] = false;
	need = frame_rows(sec, in, *blanks);
	if (need <= rows)
		return 0;
	over = need - rows + 1;	/* + the line that says so */
	return over < sec[S_CLIENTS].n ? over : sec[S_CLIENTS].n;
}

/*
 * The header line that says which columns the screen left out: their
 * names where that fits one line, else how many per table.
 */
static void hidden_line(char *buf, size_t len, unsigned int cols)
{
	const char *h = ut_umm_fit_hidden(), *t;
	size_t used;

	buf[0] = '\0';
	if (!h[0])
		return;
	snprintf(buf, len, "%u columns, hidden: %s", cols, h);
	if (strlen(buf) <= cols)
		return;
	used = (size_t)snprintf(buf, len, "%u columns, hidden:", cols);
	/* "nodes: A B; clients: C" as "nodes 2, clients 1" */
	for (t = h; *t && used < len; ) {
		size_t name = strcspn(t, ":"), end = strcspn(t, ";");
		unsigned int n = 0;

		for (size_t i = name + 1; i < end; i++)
			n += t[i] == ' ' && t[i + 1] != ' ' && t[i + 1] != ';';
		used += (size_t)snprintf(buf + used, len - used, "%s %.*s %u",
					 t == h ? "" : ",", (int)name, t, n);
		t += end;
		t += *t == ';' ? 2 : 0;
	}
}

/*
 * Prints one line fitted to cols and counts it against *left; the newline
 * goes before all but the first, so that the bottom row is used without
 * scrolling the screen.
 */
static void put_line(const char *line, unsigned int cols, unsigned int *left,
		     bool *first)
{
	if (!*left)
		return;
	printf("%s%.*s", *first ? "" : "\n", fit_words(line, cols), line);
	*first = false;
	(*left)--;
}

/* The section's lines but its last cut, and a line that says so. */
static void put_section(const struct lines *l, unsigned int cut,
			unsigned int cols, unsigned int *left, bool *first)
{
	char more[64];

	for (unsigned int i = 0; i < l->n - cut; i++)
		put_line(l->v[i], cols, left, first);
	if (cut) {
		snprintf(more, sizeof(more), "(%u row(s) not shown: no room)",
			 cut < l->n ? cut : l->n - 1);
		put_line(more, cols, left, first);
	}
}

/*
 * The screen, as top draws it: each section rendered in memory with its
 * tables fitted to the terminal's columns (whole columns hidden, the
 * header saying which), as many as its rows allow, the cursor home first.
 */
static void print_screen(const struct opts *o, const struct sample *x,
			 const char *note)
{
	static void (*const fn[S_COUNT])(const struct sample *) = {
		sec_header, sec_nodes, print_gpus, print_clients,
		print_cgroups,
	};
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	struct lines sec[S_COUNT];
	bool in[S_COUNT], blanks = true, first = true, top = true;
	unsigned int left, cut = 0;
	char hidden[512];

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_col || !ws.ws_row) {
		ws.ws_row = 24;
		ws.ws_col = 80;
	}
	left = ws.ws_row;
	screen_opts = o;
	ut_umm_fit(ws.ws_col);
	for (int i = 0; i < S_COUNT; i++) {
		in[i] = x != NULL;
		if (x)
			render(&sec[i], fn[i], x);
		else
			memset(&sec[i], 0, sizeof(sec[i]));
	}
	hidden_line(hidden, sizeof(hidden), ws.ws_col);
	ut_umm_fit(0);
	/* the title line and the one about hidden columns are kept */
	if (x)
		cut = plan(sec, in, &blanks, left - (hidden[0] ? 1 : 0) -
			   (note ? 1 : 0));
	fputs("\033[H\033[2J", stdout);	/* home, clear */
	for (int i = 0; i < S_COUNT; i++) {
		if (!in[i] || !sec[i].n)
			continue;
		if (!first && blanks)
			put_line("", ws.ws_col, &left, &top);
		put_section(&sec[i], i == S_CLIENTS ? cut : 0, ws.ws_col,
			    &left, &top);
		if (i == S_HEAD && hidden[0])
			put_line(hidden, ws.ws_col, &left, &top);
		first = false;
	}
	if (note)
		put_line(note, ws.ws_col, &left, &top);
	fflush(stdout);
	for (int i = 0; i < S_COUNT; i++)
		free(sec[i].buf);
}

static void print_text(const struct opts *o, const struct sample *x)
{
	if (!o->batch) {
		print_screen(o, x, NULL);
		return;
	}
	print_body(o, x);
	putchar('\n');
	fflush(stdout);
}

/* ---- options and the loop ------------------------------------------------- */

static void usage(void)
{
	printf("Usage: %s [options]\n"
	       "Live view of umm.ko: nodes, GPU budgets, counters as rates,\n"
	       "clients, watched memory cgroups.\n\n"
	       "  -d, --delay SECS      between samples (default 1; 0.1..3600)\n"
	       "  -n, --iterations N    stop after N samples (default: until ^C)\n"
	       "  -b, --batch           plain lines, no terminal control\n"
	       "  -J, --json            one JSON object per sample and line\n"
	       "      --sysroot DIR     DIR stands for / (tests with a fake tree)\n"
	       "  -r, --sysfs-root DIR  DIR stands for /sys (the older form;\n"
	       "                        also $%s)\n"
	       "  -h, --help            this text\n"
	       "  -V, --version         the version\n\n"
	       "Exit: 0 done, 1 umm.ko not loaded or not readable, 2 bad usage.\n",
	       ut_progname, UT_UMM_ROOT_ENV);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "batch", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'J' },
		{ "sysroot", required_argument, NULL, UT_OPT_SYSROOT },
		{ "sysfs-root", required_argument, NULL, 'r' },
		UT_OPTS_TAIL,
	};
	const char *root = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "d:n:bJr:hV", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (ut_parse_double(optarg, 0.1, 3600, &o->delay))
				ut_die_usage("bad --delay '%s' (0.1..3600 seconds)",
					     optarg);
			break;
		case 'n':
			if (ut_parse_u64(optarg, 1, UINT32_MAX, &o->count))
				ut_die_usage("bad --iterations '%s' (1 or more)",
					     optarg);
			break;
		case 'b':
			o->batch = true;
			break;
		case 'J':
			o->json = true;
			break;
		case UT_OPT_SYSROOT:
			root = ut_sysroot_sys(optarg);
			break;
		case 'r':
			root = optarg;
			break;
		default:
			ut_opt_common(c, usage);
		}
	}
	if (optind < argc)
		ut_die_usage("unexpected argument '%s'", argv[optind]);
	o->root = ut_umm_root(root);
	if (!o->json && !isatty(STDOUT_FILENO))
		o->batch = true;	/* no escapes into a file or a pipe */
}

/* Keys on the full screen: stdin without line buffering or echo. */
static struct termios tty_saved;
static bool tty_raw;

static void keys_begin(const struct opts *o)
{
	struct termios t;

	if (o->batch || o->json || !isatty(STDIN_FILENO) ||
	    tcgetattr(STDIN_FILENO, &tty_saved))
		return;
	t = tty_saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	tty_raw = !tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

static void keys_end(void)
{
	if (tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &tty_saved);
	tty_raw = false;
}

/*
 * The full screen on the terminal's alternate screen, the cursor hidden,
 * as top and less do: at the end the shell's screen is back as it was,
 * not covered by the last frame.
 */
static void screen_begin(const struct opts *o)
{
	if (!o->batch && !o->json) {
		fputs("\033[?1049h\033[?25l", stdout);
		fflush(stdout);
	}
}

static void screen_end(const struct opts *o)
{
	if (!o->batch && !o->json) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
	}
}

/*
 * Wait s seconds for the next sample. On the full screen, q ends the
 * session and a resize redraws @x (the last sample) at once.
 */
static void pause_s(const struct opts *o, double s, const struct sample *x,
		    const char *note)
{
	struct timespec t0, now;
	double left = s;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop && left > 0) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char c;

		if (poll(&p, tty_raw ? 1 : 0, (int)(left * 1000) + 1) > 0 &&
		    read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
			stop = 1;
		if (resized && !o->batch && !o->json) {
			resized = 0;
			print_screen(o, x, note);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = s - (double)(now.tv_sec - t0.tv_sec) -
		       (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
	}
}

/* The module went away after the first sample: say so once, keep going. */
static void gone(const struct opts *o, int err, bool *told, char *note,
		 size_t len)
{
	snprintf(note, len, "umm.ko is not readable under %s (%s): waiting for it",
		 o->root, strerror(-err));
	if (!o->batch && !o->json)
		print_screen(o, NULL, note);
	else if (!*told)
		ut_warn("%s", note);
	*told = true;
}

static int run(const struct opts *o)
{
	struct sample x[2];
	char note[512] = "";
	bool have = false, told = false;
	uint64_t n;
	int ret = 0, cur = 0;

	memset(x, 0, sizeof(x));
	for (n = 0; !stop && (!o->count || n < o->count); n++) {
		if (n)
			pause_s(o, o->delay, have ? &x[cur ^ 1] : NULL,
				note[0] ? note : NULL);
		if (stop)
			break;
		sample_free(&x[cur]);
		ret = take(o, &x[cur], have ? &x[cur ^ 1] : NULL);
		if (ret && !n) {
			ut_umm_warn(o->root, x[cur].s.failed[0] ?
				    x[cur].s.failed : "umtop", ret);
			break;
		}
		if (ret) {
			/* no rates across a reload: the next sample is a first */
			sample_free(&x[cur ^ 1]);
			have = false;
			gone(o, ret, &told, note, sizeof(note));
			ret = 0;
			continue;
		}
		note[0] = '\0';
		told = false;
		have = true;
		if (o->json)
			print_json(&x[cur]);
		else
			print_text(o, &x[cur]);
		cur ^= 1;
	}
	sample_free(&x[0]);
	sample_free(&x[1]);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .delay = 1.0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction wa = { .sa_handler = on_winch };
	int ret;

	ut_set_progname(argv);
	parse(argc, argv, &o);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGWINCH, &wa, NULL);
	keys_begin(&o);
	screen_begin(&o);
	ret = run(&o);
	screen_end(&o);
	keys_end();
	return ret;
}
