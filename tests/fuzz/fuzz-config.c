/* libFuzzer target for the moat.conf parser (lib/config-parser.c) and the
   settings schema over it (lib/moat-settings.c, lib/settings-def.c): the
   code that reads the admin's file in master and in moat-lda, and the
   memfd master hands every child. Built and run by tests/fuzz/run.sh.

   Checked: no input crashes, leaks or overruns (ASan); a config that
   parses is written back (moat -n's and master's serialisation) and
   parses again to equal settings, with and without only the non-default
   ones, so what master hands a child is what the admin wrote.

   The input is the file's text. Relative !include and <file paths resolve
   under a directory that does not exist; inputs naming an absolute path
   there are skipped, so a run never reads this machine's files (a glob of
   /usr/lib would only be slow). */

#include "lib.h"
#include "buffer.h"
#include "moat-settings.h"

#include <sys/mman.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CONF_NAME "/nonexistent-moat-fuzz/fuzz.conf"
/* moat_settings_write's output bound: a few times the input at most */
#define FUZZ_OUT_MAX (1024 * 1024)

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz check failed: %s\n", what);
		abort();
	}
}

/* '<' or "include", then blanks or a quote, then '/': an absolute path. */
static bool names_absolute_path(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		size_t j;
		if (data[i] == '<')
			j = i + 1;
		else if (i + 7 <= size && memcmp(data + i, "include", 7) == 0)
			j = i + 7;
		else
			continue;
		while (j < size && (data[j] == ' ' || data[j] == '\t' ||
				    data[j] == '"' || data[j] == '_' ||
				    data[j] == 't' || data[j] == 'r' ||
				    data[j] == 'y'))
			j++;
		if (j < size && data[j] == '/')
			return true;
	}
	return false;
}

static int memfd_with(const void *data, size_t size)
{
	int fd = memfd_create("fuzz-config", MFD_CLOEXEC);

	check(fd >= 0, "memfd_create");
	for (size_t done = 0; done < size;) {
		ssize_t ret = write(fd, (const char *)data + done, size - done);
		check(ret > 0, "write to memfd");
		done += (size_t)ret;
	}
	return fd;
}

static void round_trip(const struct moat_settings *set, bool non_default)
{
	buffer_t buf, *out = &buf;
	struct moat_settings *again = NULL;
	const char *error;

	buffer_init(out, FUZZ_OUT_MAX);
	/* the settings, then the secrets (as master writes for imap-login) */
	if (moat_settings_write(set, non_default, out) < 0 ||
	    moat_settings_write_secrets(set, out) < 0) {
		buffer_free(out);
		return;          /* over the bound: refused, not truncated */
	}
	int fd = memfd_with(out->data, out->used);
	int ret = moat_settings_read_fd(fd, FUZZ_CONF_NAME, &again, &error);
	if (ret < 0)
		fprintf(stderr, "re-parse: %s\n%.*s\n", error,
			(int)out->used, (const char *)out->data);
	check(ret == 0, "written settings parse again");
	check(moat_settings_equal(set, again), "round trip keeps settings");
	moat_settings_free(&again);
	close(fd);
	buffer_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_settings *set = NULL;
	const char *error;

	if (names_absolute_path(data, size))
		return 0;
	int fd = memfd_with(data, size);
	if (moat_settings_read_fd(fd, FUZZ_CONF_NAME, &set, &error) == 0) {
		round_trip(set, false);
		round_trip(set, true);
		(void)moat_settings_validate(set, &error);
		moat_settings_free(&set);
	}
	close(fd);
	return 0;
}
