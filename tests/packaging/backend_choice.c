// SPDX-License-Identifier: MIT
/*
 * backend_choice.c WORDS - how libum.so picks its backend when the CUDA
 * backend plugin, or the CUDA runtime it needs, or a GPU is missing: asked
 * for cuda, um_context_create() fails with an ERR line that contains WORDS;
 * asked for auto, it uses sim. Exit 0 when both hold; the lines are shown.
 */
#include <stdio.h>
#include <string.h>
#include <um.h>

static char err_line[1024];

static void log_line(void *arg, int level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "libum: %s\n", msg);
	if (level <= UM_LOG_ERR && !err_line[0])
		snprintf(err_line, sizeof(err_line), "%s", msg);
}

static int create(uint32_t backend, struct um_context **ctx)
{
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = backend;
	cfg.log = log_line;
	cfg.log_level = UM_LOG_INFO;
	return um_context_create(&cfg, ctx);
}

int main(int argc, char **argv)
{
	struct um_context *ctx = NULL;
	int rc, used;

	if (argc != 2) {
		fprintf(stderr, "usage: backend_choice WORDS\n");
		return 2;
	}
	rc = create(UM_BACKEND_CUDA, &ctx);
	if (rc >= 0 || !strstr(err_line, argv[1])) {
		fprintf(stderr, "cuda: rc %d, ERR line \"%s\", wanted \"%s\"\n",
			rc, err_line, argv[1]);
		if (rc >= 0)
			um_context_destroy(ctx);
		return 1;
	}
	rc = create(UM_BACKEND_AUTO, &ctx);
	if (rc < 0)
		return 1;
	used = um_context_backend(ctx);
	um_context_destroy(ctx);
	if (used != UM_BACKEND_SIM) {
		fprintf(stderr, "auto: backend %d, wanted sim\n", used);
		return 1;
	}
	return 0;
}
