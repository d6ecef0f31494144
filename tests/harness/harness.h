/* SPDX-License-Identifier: MIT */
/*
 * harness.h - um's own single-header test harness, in the kselftest style.
 *
 * A test program includes this header, declares tests and ends with
 * TEST_HARNESS_MAIN. Every test runs in a forked child with a timeout, so a
 * crash, a hang or a failed ASSERT ends one test, never the whole program.
 * Output is TAP 13 as kselftest prints it; the exit status is 0 when every
 * test passed, 1 when any failed and 4 when all were skipped.
 *
 *	#include "harness.h"
 *
 *	TEST(open_close) { ASSERT_EQ(0, close(open("/", O_RDONLY))); }
 *
 *	FIXTURE(ctx) { int fd; };
 *	FIXTURE_VARIANT(ctx) { int flags; };
 *	FIXTURE_VARIANT_ADD(ctx, ro) { .flags = O_RDONLY };
 *	FIXTURE_SETUP(ctx) { self->fd = open("/", variant->flags); }
 *	FIXTURE_TEARDOWN(ctx) { close(self->fd); }
 *	TEST_F(ctx, valid) { ASSERT_LE(0, self->fd) TH_LOG("extra %d", 1); }
 *
 *	TEST_HARNESS_MAIN
 *
 * Macros
 *   TEST(name), TEST_SIGNAL(name, sig)    a test; the second passes only if
 *                                          the test dies by signal sig
 *   FIXTURE(f) { members };                per-test state, reached as self->
 *   FIXTURE_SETUP(f), FIXTURE_TEARDOWN(f)  optional; teardown runs whenever
 *                                          setup returned, even after an
 *                                          ASSERT failed in the test body
 *   FIXTURE_VARIANT(f) { members };        parameters, reached as variant->
 *   FIXTURE_VARIANT_ADD(f, v) { init };    each TEST_F runs once per variant
 *   TEST_F(f, name), TEST_F_SIGNAL(f, name, sig)
 *   ASSERT_xx / EXPECT_xx with xx one of EQ NE LT LE GT GE (two operands,
 *     any mix of integer, floating and pointer types, compared by value, so
 *     ASSERT_EQ(-1, some_size_t) fails instead of warning) and TRUE FALSE
 *     NULL NONNULL STREQ STRNE. On failure both expressions and values are
 *     printed with file:line. ASSERT ends the test (from any thread), EXPECT
 *     marks it failed and goes on. A statement written right after either
 *     one runs only on failure:  ASSERT_EQ(a, b) TH_LOG("i=%d", i);
 *   SKIP(statement, fmt, ...)              record a skip reason, then run
 *                                          statement (usually return)
 *   TH_LOG(fmt, ...)                       "# file:line:test:message"
 *   TEST_TIMEOUT_SET(name, secs)           name is a test name, fixture.test
 *                                          or fixture.variant.test
 *   TEST_HARNESS_MAIN                      defines main()
 *
 * Timeouts: TEST_TIMEOUT seconds (define it before the include to change
 * the program's default, 30 otherwise); TEST_TIMEOUT_SET per test; the
 * environment variable UM_TEST_TIMEOUT=<secs> overrides both (0 = none). A
 * test that runs out of time is killed with SIGKILL, along with its process
 * group, and reported as a failure.
 *
 * A test's child exits with exit() when it passed, so atexit work such as
 * LeakSanitizer's leak check runs and a leak fails the test; after a failure
 * it uses _exit(). Checks may run in threads or in processes the test
 * forks: a failure there fails the test too.
 *
 * Options of a test program: -l list tests; -t NAME, -f FIXTURE, -v VARIANT,
 * -r FIXTURE.VARIANT.TEST (or FIXTURE.TEST) run only matching tests (each
 * may repeat: values of one option are alternatives, different options must
 * all match, so "-f ctx -v ro" runs ctx's tests for variant ro); -T -F -V
 * -R exclude alike; -h help. Plain TESTs belong to the fixture "global".
 *
 * Make targets must not fail on exit status 4 (all skipped):
 * tests/harness/run.sh runs test programs and maps 0/4 to success.
 */
#ifndef UM_HARNESS_H
#define UM_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_TIMEOUT
#define TEST_TIMEOUT 30
#endif

#ifndef TH_LOG_STREAM
#define TH_LOG_STREAM stderr
#endif

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

#define TH__UNUSED	__attribute__((unused))
#define TH__CAT2(a, b)	a##b
#define TH__CAT(a, b)	TH__CAT2(a, b)

/* ---- State shared between the runner and the forked test ------------- */

/*
 * One per run, in a MAP_SHARED page so that what the child records (failure,
 * skip reason) survives its death and is read by the parent.
 */
struct __test_metadata {
	const char *name;		/* the test's own name */
	const char *full_name;		/* fixture[.variant].test */
	jmp_buf env;			/* where ASSERT goes in the child */
	int env_valid;
	pid_t main_tid;			/* thread that may longjmp */
	int setup_done;
	int failed;
	int bailed;			/* an ASSERT ended the test */
	int skipped;
	char reason[256];
};

struct th__test;
struct th__fixture;

typedef void (*th__fn_t)(struct __test_metadata *meta, const void *variant);

struct th__variant {
	const char *name;
	const void *data;
	struct th__variant *next;
};

struct th__test {
	const char *name;
	th__fn_t fn;
	struct th__fixture *fixture;
	int termsig;
	int timeout;			/* 0: not set per test */
	int added;
	struct th__test *next;
};

struct th__fixture {
	const char *name;
	struct th__variant *variants, **vtail;
	struct th__test *tests, **ttail;
	int added;
	struct th__fixture *next;
};

struct th__timeout {
	const char *name;
	int secs;
	struct th__timeout *next;
};

/*
 * The registry is weak so that tests spread over several translation units
 * of one program end up in a single list.
 */
struct th__registry {
	struct th__fixture *head, **tail;
	struct th__timeout *timeouts;
};
__attribute__((weak)) struct th__registry th__reg;
__attribute__((weak)) struct __test_metadata *th__cur;

static struct th__fixture th__fixture_global TH__UNUSED = {
	.name = "global",
};

static inline void th__add_fixture(struct th__fixture *f)
{
	if (f->added)
		return;
	f->added = 1;
	if (!f->vtail)
		f->vtail = &f->variants;
	if (!f->ttail)
		f->ttail = &f->tests;
	if (!th__reg.tail)
		th__reg.tail = &th__reg.head;
	*th__reg.tail = f;
	th__reg.tail = &f->next;
}

static inline void th__add_test(struct th__test *t)
{
	if (t->added)
		return;
	t->added = 1;
	th__add_fixture(t->fixture);
	*t->fixture->ttail = t;
	t->fixture->ttail = &t->next;
}

static inline void th__add_variant(struct th__fixture *f, struct th__variant *v)
{
	th__add_fixture(f);
	*f->vtail = v;
	f->vtail = &v->next;
}

static inline void th__add_timeout(struct th__timeout *t)
{
	t->next = th__reg.timeouts;
	th__reg.timeouts = t;
}

/* ---- Logging, skipping, failing -------------------------------------- */

static inline const char *th__test_name(void)
{
	return th__cur ? th__cur->name : "?";
}

static inline __attribute__((format(printf, 3, 4)))
void th__log(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	flockfile(TH_LOG_STREAM);
	fprintf(TH_LOG_STREAM, "# %s:%d:%s:", file, line, th__test_name());
	va_start(ap, fmt);
	vfprintf(TH_LOG_STREAM, fmt, ap);
	va_end(ap);
	fputc('\n', TH_LOG_STREAM);
	funlockfile(TH_LOG_STREAM);
	fflush(TH_LOG_STREAM);
}

#define TH_LOG(...) th__log(__FILE__, __LINE__, __VA_ARGS__)

static inline __attribute__((format(printf, 1, 2)))
void th__skip(const char *fmt, ...)
{
	struct __test_metadata *m = th__cur;
	char buf[sizeof(m->reason)];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	for (char *p = buf; *p; p++)	/* one line in TAP */
		if (*p == '\n')
			*p = ' ';
	printf("#      SKIP      %s\n", buf);
	fflush(stdout);
	if (m) {
		memcpy(m->reason, buf, sizeof(m->reason));
		m->skipped = 1;
	}
}

/* Run statement (e.g. return) after recording why the test is skipped. */
#define SKIP(statement, ...) do {		\
		th__skip(__VA_ARGS__);		\
		statement;			\
	} while (0)

static inline pid_t th__gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * Called after a failed check has run its optional statement. EXPECT goes
 * on; ASSERT jumps back to the runner in the child's main thread and ends
 * the whole child from any other thread.
 */
static inline int th__bail(int is_assert)
{
	struct __test_metadata *m = th__cur;

	if (!is_assert)
		return 0;
	fflush(stdout);
	fflush(stderr);
	if (!m)
		exit(KSFT_FAIL);
	m->bailed = 1;
	if (m->env_valid && th__gettid() == m->main_tid)
		longjmp(m->env, 1);
	_exit(KSFT_FAIL);
}

/* ---- Comparing values of any scalar type ----------------------------- */

enum th__kind { TH__S, TH__U, TH__F, TH__P };

struct th__val {
	enum th__kind kind;
	intmax_t i;
	uintmax_t u;
	long double f;
	const volatile void *p;
};

static inline struct th__val th__vs(intmax_t v)
{
	return (struct th__val){ .kind = TH__S, .i = v };
}

static inline struct th__val th__vu(uintmax_t v)
{
	return (struct th__val){ .kind = TH__U, .u = v };
}

static inline struct th__val th__vf(long double v)
{
	return (struct th__val){ .kind = TH__F, .f = v };
}

/*
 * Only the address is looked at. Without saying so, gcc >= 11 assumes a
 * const pointer parameter reads the object and flags ASSERT_NONNULL(p) on
 * a fresh malloc() as a use of uninitialized memory.
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
__attribute__((access(none, 1)))
#endif
static inline struct th__val th__vp(const volatile void *v)
{
	return (struct th__val){ .kind = TH__P, .p = v };
}

/* Selects a converter by the operand's type; evaluates it exactly once. */
#define TH__VAL(x) _Generic((x),				\
	_Bool: th__vs, char: th__vs, signed char: th__vs,	\
	unsigned char: th__vs, short: th__vs,			\
	unsigned short: th__vs, int: th__vs, long: th__vs,	\
	long long: th__vs, unsigned int: th__vu,		\
	unsigned long: th__vu, unsigned long long: th__vu,	\
	float: th__vf, double: th__vf, long double: th__vf,	\
	default: th__vp)(x)

enum th__op { TH__EQ, TH__NE, TH__LT, TH__LE, TH__GT, TH__GE, TH__TRUE,
	      TH__FALSE, TH__STREQ, TH__STRNE };

static inline long double th__as_f(struct th__val v)
{
	switch (v.kind) {
	case TH__S: return (long double)v.i;
	case TH__U: return (long double)v.u;
	case TH__F: return v.f;
	default:    return (long double)(uintptr_t)v.p;
	}
}

static inline uintmax_t th__as_u(struct th__val v)
{
	return v.kind == TH__P ? (uintmax_t)(uintptr_t)v.p :
	       v.kind == TH__S ? (uintmax_t)v.i : v.u;
}

/* -1, 0, 1 for integers and pointers, mathematically (no sign surprises) */
static inline int th__cmp_int(struct th__val a, struct th__val b)
{
	uintmax_t ua, ub;

	if (a.kind == TH__S && b.kind == TH__S)
		return (a.i > b.i) - (a.i < b.i);
	if (a.kind == TH__S && a.i < 0)
		return -1;
	if (b.kind == TH__S && b.i < 0)
		return 1;
	ua = th__as_u(a);
	ub = th__as_u(b);
	return (ua > ub) - (ua < ub);
}

static inline int th__holds(enum th__op op, struct th__val a, struct th__val b)
{
	if (a.kind == TH__F || b.kind == TH__F) {
		long double x = th__as_f(a), y = th__as_f(b);

		switch (op) {	/* NaN compares false except for != */
		case TH__EQ: return x == y;
		case TH__NE: return x != y;
		case TH__LT: return x < y;
		case TH__LE: return x <= y;
		case TH__GT: return x > y;
		case TH__GE: return x >= y;
		default:     return 0;
		}
	}
	switch (op) {
	case TH__EQ: return th__cmp_int(a, b) == 0;
	case TH__NE: return th__cmp_int(a, b) != 0;
	case TH__LT: return th__cmp_int(a, b) < 0;
	case TH__LE: return th__cmp_int(a, b) <= 0;
	case TH__GT: return th__cmp_int(a, b) > 0;
	case TH__GE: return th__cmp_int(a, b) >= 0;
	default:     return 0;
	}
}

static inline const char *th__fmt(char *buf, size_t n, struct th__val v)
{
	switch (v.kind) {
	case TH__S:
		snprintf(buf, n, "%jd", v.i);
		break;
	case TH__U:
		if (v.u > 65535)
			snprintf(buf, n, "%ju = 0x%jx", v.u, v.u);
		else
			snprintf(buf, n, "%ju", v.u);
		break;
	case TH__F:
		snprintf(buf, n, "%.17Lg", v.f);
		break;
	default:
		if (v.p)
			snprintf(buf, n, "%p", (const void *)v.p);
		else
			snprintf(buf, n, "NULL");
		break;
	}
	return buf;
}

static inline void th__mark_failed(void)
{
	if (th__cur)
		th__cur->failed = 1;
}

static const char *const th__opstr[] TH__UNUSED = {
	[TH__EQ] = "==", [TH__NE] = "!=", [TH__LT] = "<", [TH__LE] = "<=",
	[TH__GT] = ">", [TH__GE] = ">=", [TH__STREQ] = "==",
	[TH__STRNE] = "!=",
};

/* Returns 1 (and reports) when the check failed. */
static inline int th__check(const char *file, int line, enum th__op op,
			    const char *as, struct th__val a,
			    const char *bs, struct th__val b)
{
	char x[64], y[64];

	if (th__holds(op, a, b))
		return 0;
	th__mark_failed();
	th__log(file, line, "Expected %s (%s) %s %s (%s)", as,
		th__fmt(x, sizeof(x), a), th__opstr[op], bs,
		th__fmt(y, sizeof(y), b));
	return 1;
}

static inline int th__check_bool(const char *file, int line, int want,
				 const char *as, struct th__val a)
{
	char x[64];
	int truth = th__holds(TH__NE, a, th__vs(0));

	if (truth == want)
		return 0;
	th__mark_failed();
	th__log(file, line, "Expected %s (%s) to be %s", as,
		th__fmt(x, sizeof(x), a), want ? "true" : "false");
	return 1;
}

static inline int th__check_null(const char *file, int line, int want_null,
				 const char *as, struct th__val a)
{
	char x[64];
	int is_null = th__holds(TH__EQ, a, th__vs(0));

	if (is_null == want_null)
		return 0;
	th__mark_failed();
	th__log(file, line, "Expected %s (%s) to be %s", as,
		th__fmt(x, sizeof(x), a), want_null ? "NULL" : "non-NULL");
	return 1;
}

static inline int th__check_str(const char *file, int line, enum th__op op,
				const char *as, const char *a,
				const char *bs, const char *b)
{
	int same = (a && b) ? strcmp(a, b) == 0 : a == b;

	if (same == (op == TH__STREQ))
		return 0;
	th__mark_failed();
	th__log(file, line, "Expected %s (%s%s%s) %s %s (%s%s%s)",
		as, a ? "\"" : "", a ? a : "NULL", a ? "\"" : "",
		th__opstr[op],
		bs, b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
	return 1;
}

/*
 * A failed check runs the statement written after the macro (if any, an
 * empty one otherwise), then th__bail(). One for-statement, so the macros
 * are safe inside if/else without braces. clang's -Wempty-body would flag
 * "ASSERT_EQ(a, b); next();" on one line, so it is off in test programs.
 */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wempty-body"
#endif
#define TH__ON_FAIL(check, is_assert)					\
	TH__ON_FAIL_N(check, is_assert, TH__CAT(th__failed_, __COUNTER__))
#define TH__ON_FAIL_N(check, is_assert, var)				\
	for (int var = (check); var; var = th__bail(is_assert))

#define TH__CMP(a, op, b, is_assert)					\
	TH__ON_FAIL(th__check(__FILE__, __LINE__, op, #a, TH__VAL(a),	\
			      #b, TH__VAL(b)), is_assert)

#define ASSERT_EQ(expected, seen) TH__CMP(expected, TH__EQ, seen, 1)
#define ASSERT_NE(expected, seen) TH__CMP(expected, TH__NE, seen, 1)
#define ASSERT_LT(expected, seen) TH__CMP(expected, TH__LT, seen, 1)
#define ASSERT_LE(expected, seen) TH__CMP(expected, TH__LE, seen, 1)
#define ASSERT_GT(expected, seen) TH__CMP(expected, TH__GT, seen, 1)
#define ASSERT_GE(expected, seen) TH__CMP(expected, TH__GE, seen, 1)
#define EXPECT_EQ(expected, seen) TH__CMP(expected, TH__EQ, seen, 0)
#define EXPECT_NE(expected, seen) TH__CMP(expected, TH__NE, seen, 0)
#define EXPECT_LT(expected, seen) TH__CMP(expected, TH__LT, seen, 0)
#define EXPECT_LE(expected, seen) TH__CMP(expected, TH__LE, seen, 0)
#define EXPECT_GT(expected, seen) TH__CMP(expected, TH__GT, seen, 0)
#define EXPECT_GE(expected, seen) TH__CMP(expected, TH__GE, seen, 0)

#define TH__BOOL(x, want, is_assert)					\
	TH__ON_FAIL(th__check_bool(__FILE__, __LINE__, want, #x,	\
				   TH__VAL(x)), is_assert)
#define ASSERT_TRUE(x)	TH__BOOL(x, 1, 1)
#define ASSERT_FALSE(x)	TH__BOOL(x, 0, 1)
#define EXPECT_TRUE(x)	TH__BOOL(x, 1, 0)
#define EXPECT_FALSE(x)	TH__BOOL(x, 0, 0)

#define TH__NULL(x, want, is_assert)					\
	TH__ON_FAIL(th__check_null(__FILE__, __LINE__, want, #x,	\
				   TH__VAL(x)), is_assert)
#define ASSERT_NULL(x)		TH__NULL(x, 1, 1)
#define ASSERT_NONNULL(x)	TH__NULL(x, 0, 1)
#define EXPECT_NULL(x)		TH__NULL(x, 1, 0)
#define EXPECT_NONNULL(x)	TH__NULL(x, 0, 0)

#define TH__STR(a, op, b, is_assert)					\
	TH__ON_FAIL(th__check_str(__FILE__, __LINE__, op, #a, (a), #b,	\
				  (b)), is_assert)
#define ASSERT_STREQ(expected, seen) TH__STR(expected, TH__STREQ, seen, 1)
#define ASSERT_STRNE(expected, seen) TH__STR(expected, TH__STRNE, seen, 1)
#define EXPECT_STREQ(expected, seen) TH__STR(expected, TH__STREQ, seen, 0)
#define EXPECT_STRNE(expected, seen) TH__STR(expected, TH__STRNE, seen, 0)

/* ---- Declaring tests ------------------------------------------------- */

#define TH__TEST(tn, sig)						\
	static void th__fn_##tn(struct __test_metadata *, const void *);\
	static struct th__test th__t_##tn = {				\
		.name = #tn, .fn = th__fn_##tn,			\
		.fixture = &th__fixture_global, .termsig = (sig),	\
	};								\
	static void __attribute__((constructor)) th__reg_##tn(void)	\
	{								\
		th__add_test(&th__t_##tn);				\
	}								\
	static void th__fn_##tn(					\
		struct __test_metadata *_metadata TH__UNUSED,		\
		const void *th__variant TH__UNUSED)

#define TEST(name)		TH__TEST(name, 0)
#define TEST_SIGNAL(name, sig)	TH__TEST(name, sig)

#define FIXTURE_DATA(f)		struct th__data_##f
#define FIXTURE_VARIANT(f)	struct th__variant_##f

/*
 * Setup and teardown are weak so that a fixture may leave either out; the
 * declarations here also keep -Wmissing-prototypes quiet.
 */
#define FIXTURE(f)							\
	FIXTURE_VARIANT(f);						\
	FIXTURE_DATA(f);						\
	void th__setup_##f(struct __test_metadata *, FIXTURE_DATA(f) *,\
			   const FIXTURE_VARIANT(f) *) __attribute__((weak));\
	void th__teardown_##f(struct __test_metadata *,			\
			      FIXTURE_DATA(f) *,			\
			      const FIXTURE_VARIANT(f) *)		\
		__attribute__((weak));					\
	static struct th__fixture th__fixture_##f = { .name = #f };	\
	static void __attribute__((constructor)) th__fxreg_##f(void)	\
	{								\
		th__add_fixture(&th__fixture_##f);			\
	}								\
	FIXTURE_DATA(f)

#define FIXTURE_SETUP(f)						\
	void th__setup_##f(struct __test_metadata *_metadata TH__UNUSED,\
			   FIXTURE_DATA(f) *self TH__UNUSED,		\
			   const FIXTURE_VARIANT(f) *variant TH__UNUSED)

#define FIXTURE_TEARDOWN(f)						\
	void th__teardown_##f(						\
		struct __test_metadata *_metadata TH__UNUSED,		\
		FIXTURE_DATA(f) *self TH__UNUSED,			\
		const FIXTURE_VARIANT(f) *variant TH__UNUSED)

#define FIXTURE_VARIANT_ADD(f, v)					\
	static const FIXTURE_VARIANT(f) th__vdata_##f##__##v;		\
	static struct th__variant th__v_##f##__##v = {			\
		.name = #v, .data = &th__vdata_##f##__##v,		\
	};								\
	static void __attribute__((constructor))			\
	th__vreg_##f##__##v(void)					\
	{								\
		th__add_variant(&th__fixture_##f, &th__v_##f##__##v);	\
	}								\
	static const FIXTURE_VARIANT(f) th__vdata_##f##__##v =

/*
 * The fixture data is static: the child runs one test and exits, and a
 * static object keeps its value across the longjmp of a failed ASSERT.
 */
#define TH__TEST_F(f, tn, sig)						\
	static void th__body_##f##__##tn(struct __test_metadata *,	\
					 FIXTURE_DATA(f) *,		\
					 const FIXTURE_VARIANT(f) *);	\
	static void th__wrap_##f##__##tn(struct __test_metadata *th__m,	\
					 const void *th__v)		\
	{								\
		static FIXTURE_DATA(f) th__self;			\
		/* through variables: -Waddress on weak functions */	\
		void (*th__setup)(struct __test_metadata *,		\
				  FIXTURE_DATA(f) *,			\
				  const FIXTURE_VARIANT(f) *) =		\
			th__setup_##f;					\
		void (*th__teardown)(struct __test_metadata *,		\
				     FIXTURE_DATA(f) *,			\
				     const FIXTURE_VARIANT(f) *) =	\
			th__teardown_##f;				\
									\
		if (setjmp(th__m->env) == 0) {				\
			th__m->env_valid = 1;				\
			if (th__setup)					\
				th__setup(th__m, &th__self, th__v);	\
			th__m->setup_done = 1;				\
			if (!th__m->skipped)				\
				th__body_##f##__##tn(th__m, &th__self,	\
						     th__v);		\
		}							\
		if (th__m->setup_done && th__teardown) {		\
			if (setjmp(th__m->env) == 0)			\
				th__teardown(th__m, &th__self, th__v);	\
		}							\
	}								\
	static struct th__test th__t_##f##__##tn = {			\
		.name = #tn, .fn = th__wrap_##f##__##tn,		\
		.fixture = &th__fixture_##f, .termsig = (sig),		\
	};								\
	static void __attribute__((constructor))			\
	th__reg_##f##__##tn(void)					\
	{								\
		th__add_test(&th__t_##f##__##tn);			\
	}								\
	static void th__body_##f##__##tn(				\
		struct __test_metadata *_metadata TH__UNUSED,		\
		FIXTURE_DATA(f) *self TH__UNUSED,			\
		const FIXTURE_VARIANT(f) *variant TH__UNUSED)

#define TEST_F(f, name)			TH__TEST_F(f, name, 0)
#define TEST_F_SIGNAL(f, name, sig)	TH__TEST_F(f, name, sig)

/*
 * __COUNTER__ changes with each use, so take one value and pass it down.
 * The trailing tag declaration swallows the caller's semicolon.
 */
#define TH__TIMEOUT_N(namestr, sec, n)					\
	static struct th__timeout TH__CAT(th__to_, n) = {		\
		.name = namestr, .secs = (sec),				\
	};								\
	static void __attribute__((constructor))			\
	TH__CAT(th__toreg_, n)(void)					\
	{								\
		th__add_timeout(&TH__CAT(th__to_, n));			\
	}								\
	struct th__timeout

#define TEST_TIMEOUT_SET(tn, sec)					\
	TH__TIMEOUT_N(#tn, sec, __COUNTER__)

/* ---- Running --------------------------------------------------------- */

/* Signal-handler state of the runner (parent). */
static volatile sig_atomic_t th__child_pid TH__UNUSED;
static volatile sig_atomic_t th__timed_out TH__UNUSED;

static inline void th__kill_child(void)
{
	pid_t pid = (pid_t)th__child_pid;

	if (pid > 0) {
		kill(-pid, SIGKILL);	/* the test's process group */
		kill(pid, SIGKILL);	/* in case it had not set it yet */
	}
}

static inline void th__on_alarm(int sig)
{
	(void)sig;
	th__timed_out = 1;
	th__kill_child();
}

static inline void th__on_term(int sig)
{
	th__kill_child();
	signal(sig, SIG_DFL);
	raise(sig);
}

struct th__opts {
	int list;
	int ninc, nexc;
	struct { char kind; const char *val; } inc[64], exc[64];
};

static inline int th__match1(char kind, const char *val, const char *fx,
			     const char *var, const char *test,
			     const char *full)
{
	switch (kind) {
	case 't': return strcmp(val, test) == 0;
	case 'f': return strcmp(val, fx) == 0;
	case 'v': return strcmp(val, var) == 0;
	default:  return strcmp(val, full) == 0;
	}
}

/*
 * Selection: for each kind of include option given (-t, -f, -v, -r), the
 * test must match one of its values; then it must match no exclude option.
 */
static inline int th__selected(const struct th__opts *o, const char *fx,
			       const char *var, const char *test,
			       const char *full)
{
	static const char kinds[] = "tfvr";
	int i;

	for (const char *k = kinds; *k; k++) {
		int given = 0, hit = 0;

		for (i = 0; i < o->ninc; i++) {
			if (o->inc[i].kind != *k)
				continue;
			given = 1;
			hit |= th__match1(*k, o->inc[i].val, fx, var, test,
					  full);
		}
		if (given && !hit)
			return 0;
	}
	for (i = 0; i < o->nexc; i++)
		if (th__match1(o->exc[i].kind, o->exc[i].val, fx, var, test,
			       full))
			return 0;
	return 1;
}

static inline void th__full_name(char *buf, size_t n,
				 const struct th__fixture *f,
				 const struct th__variant *v,
				 const struct th__test *t)
{
	if (v)
		snprintf(buf, n, "%s.%s.%s", f->name, v->name, t->name);
	else
		snprintf(buf, n, "%s.%s", f->name, t->name);
}

static inline int th__env_timeout(void)
{
	const char *s = getenv("UM_TEST_TIMEOUT");
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 86400) {
		fprintf(stderr, "# UM_TEST_TIMEOUT=%s is not a number of "
			"seconds (0-86400); ignored\n", s);
		return -1;
	}
	return (int)v;
}

static inline int th__timeout_for(const struct th__test *t, const char *fx,
				  const char *full, int env)
{
	char fxt[512];
	const struct th__timeout *to;

	if (env >= 0)
		return env;
	snprintf(fxt, sizeof(fxt), "%s.%s", fx, t->name);
	for (to = th__reg.timeouts; to; to = to->next)
		if (!strcmp(to->name, t->name) || !strcmp(to->name, fxt) ||
		    !strcmp(to->name, full))
			return to->secs;
	return TEST_TIMEOUT;
}

static inline void th__child(const struct th__test *t, const void *vdata,
			     struct __test_metadata *m)
{
	struct rlimit nocore = { 0, 0 };

	signal(SIGALRM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	setpgid(0, 0);
	setrlimit(RLIMIT_CORE, &nocore);	/* expected crashes: no cores */
	m->main_tid = th__gettid();
	th__cur = m;
	if (setjmp(m->env) == 0) {	/* TEST_F wrappers set their own */
		m->env_valid = 1;
		t->fn(m, vdata);
	}
	m->env_valid = 0;
	fflush(stdout);
	fflush(stderr);
	/* what a failed test left behind is no news: skip LeakSanitizer */
	if (m->failed)
		_exit(KSFT_FAIL);
	/* exit, not _exit: atexit work (LeakSanitizer) still runs */
	exit(m->skipped ? KSFT_SKIP : KSFT_PASS);
}

/* Returns KSFT_PASS, KSFT_FAIL or KSFT_SKIP after printing the verdict. */
static inline int th__run_one(const struct th__test *t, const void *vdata,
			      const char *full, int timeout,
			      struct __test_metadata *m)
{
	siginfo_t si;
	int status, result;
	pid_t pid;

	memset(m, 0, sizeof(*m));
	m->name = t->name;
	m->full_name = full;
	printf("#  RUN           %s ...\n", full);
	fflush(stdout);
	fflush(stderr);

	th__timed_out = 0;
	pid = fork();
	if (pid < 0) {
		printf("# %s: fork: %s\n", t->name, strerror(errno));
		return KSFT_FAIL;
	}
	if (pid == 0)
		th__child(t, vdata, m);
	setpgid(pid, pid);
	th__child_pid = pid;
	alarm((unsigned int)timeout);
	/* WNOWAIT: the pid stays reserved until the alarm is off */
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
	       errno == EINTR)
		;
	alarm(0);
	th__child_pid = 0;
	kill(-pid, SIGKILL);	/* whatever the test left behind */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;

	result = KSFT_FAIL;
	if (th__timed_out) {
		printf("# %s: Test terminated by timeout (%d s)\n", t->name,
		       timeout);
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (t->termsig && sig == t->termsig && !m->failed)
			result = KSFT_PASS;
		else if (t->termsig && sig == t->termsig)
			;	/* an EXPECT failed before the signal */
		else
			printf("# %s: Test terminated unexpectedly by signal "
			       "%d (%s)\n", t->name, sig, strsignal(sig));
	} else {
		int code = WEXITSTATUS(status);

		if (code == KSFT_SKIP && m->skipped && !m->failed)
			result = KSFT_SKIP;
		else if (m->failed && m->bailed)
			printf("# %s: Test terminated by assertion\n",
			       t->name);
		else if (m->failed)
			;
		else if (t->termsig)
			printf("# %s: Test exited normally (code %d) instead "
			       "of by signal %d (%s)\n", t->name, code,
			       t->termsig, strsignal(t->termsig));
		else if (code == KSFT_PASS)
			result = KSFT_PASS;
		else
			printf("# %s: Test exited with unexpected code %d\n",
			       t->name, code);
	}
	printf("#          %4s  %s\n", result == KSFT_FAIL ? "FAIL" :
	       result == KSFT_SKIP ? "SKIP" : "OK", full);
	return result;
}

static inline void th__usage(const char *argv0)
{
	printf("usage: %s [-h] [-l] [-t|-T test] [-f|-F fixture] "
	       "[-v|-V variant] [-r|-R fixture[.variant].test]\n"
	       "  -l  list tests        -h  this help\n"
	       "  lower case options select, upper case ones exclude; each "
	       "may repeat\n"
	       "  plain TESTs belong to fixture \"global\"\n"
	       "  UM_TEST_TIMEOUT=<secs> overrides every test's timeout "
	       "(0: none)\n", argv0);
}

static inline int th__parse(int argc, char **argv, struct th__opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "hlt:T:f:F:v:V:r:R:")) != -1) {
		switch (c) {
		case 'l':
			o->list = 1;
			break;
		case 't': case 'f': case 'v': case 'r':
			if (o->ninc == 64)
				return -1;
			o->inc[o->ninc].kind = (char)c;
			o->inc[o->ninc++].val = optarg;
			break;
		case 'T': case 'F': case 'V': case 'R':
			if (o->nexc == 64)
				return -1;
			o->exc[o->nexc].kind = (char)(c - 'A' + 'a');
			o->exc[o->nexc++].val = optarg;
			break;
		case 'h':
			th__usage(argv[0]);
			exit(0);
		default:
			return -1;
		}
	}
	return optind < argc ? -1 : 0;
}

/*
 * Walks fixtures, their variants (or none) and their tests, in declaration
 * order; run == 0 only counts, run == 1 runs.
 */
static inline int th__main(int argc, char **argv)
{
	static struct th__opts o;
	unsigned int n = 0, cases = 0, idx = 0;
	unsigned int pass = 0, fail = 0, skip = 0;
	struct __test_metadata *m = NULL;
	struct sigaction sa;
	int env = th__env_timeout();

	if (th__parse(argc, argv, &o)) {
		th__usage(argv[0]);
		return KSFT_FAIL;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (int run = 0; run < 2; run++) {
		for (struct th__fixture *f = th__reg.head; f; f = f->next) {
			struct th__variant *v = f->variants;
			int has_case;

			do {
				has_case = 0;
				for (struct th__test *t = f->tests; t;
				     t = t->next) {
					char full[512];

					th__full_name(full, sizeof(full), f, v,
						      t);
					if (!th__selected(&o, f->name,
							  v ? v->name : "",
							  t->name, full))
						continue;
					has_case = 1;
					if (!run) {
						n++;
						continue;
					}
					if (o.list) {
						printf("%s\n", full);
						continue;
					}
					switch (th__run_one(t, v ? v->data :
							    NULL, full,
							    th__timeout_for(t,
							    f->name, full,
							    env), m)) {
					case KSFT_PASS:
						pass++;
						printf("ok %u %s\n", ++idx,
						       full);
						break;
					case KSFT_SKIP:
						skip++;
						printf("ok %u %s # SKIP %s\n",
						       ++idx, full, m->reason);
						break;
					default:
						fail++;
						printf("not ok %u %s\n", ++idx,
						       full);
					}
				}
				cases += !run && has_case;
				v = v ? v->next : NULL;
			} while (v);
		}
		if (run || o.list)
			continue;
		printf("TAP version 13\n1..%u\n", n);
		printf("# Starting %u tests from %u test cases.\n", n, cases);
		m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			printf("Bail out! mmap: %s\n", strerror(errno));
			return KSFT_FAIL;
		}
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = th__on_alarm;	/* no SA_RESTART */
		sigaction(SIGALRM, &sa, NULL);
		sa.sa_handler = th__on_term;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	if (o.list)
		return KSFT_PASS;

	printf("# %s: %u / %u tests passed.\n", fail ? "FAILED" : "PASSED",
	       pass + skip, n);
	printf("# Totals: pass:%u fail:%u xfail:0 xpass:0 skip:%u error:0\n",
	       pass, fail, skip);
	if (fail)
		return KSFT_FAIL;
	return pass ? KSFT_PASS : KSFT_SKIP;
}

#define TEST_HARNESS_MAIN						\
	int main(int argc, char **argv)					\
	{								\
		return th__main(argc, argv);				\
	}

#endif /* UM_HARNESS_H */
