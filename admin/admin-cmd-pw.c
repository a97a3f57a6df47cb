/* moatadm pw: moat-pw under moatadm's name (doc/moat-pw.1 stays its
   reference). It is exec'd rather than linked so that the one tool that
   handles a typed password stays small and needs no socket. */
#include "admin-common.h"

int admin_cmd_pw(struct admin_ctx *ctx ATTR_UNUSED, int argc, char **argv)
{
	const char *path = MOAT_SBINDIR "/moat-pw";
	/* argv[0] ("pw") becomes moat-pw's name; its options follow. */
	char **args = i_malloc(sizeof(char *) * ((size_t)argc + 1));

	args[0] = (char *)"moat-pw";
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	args[argc] = NULL;
	fflush(stdout);
	execv(path, args);
	fprintf(stderr, "moatadm: cannot run %s: %s\n", path, strerror(errno));
	free(args);
	return ADMIN_EXIT_TEMPFAIL;
}
