/* moat-pw: hash a password for a passdb, like "doveadm pw".
       moat-pw [-s SCHEME] [-r ROUNDS] [-p PASSWORD] [-t HASH]
   Without -p the password is read from the terminal (twice, no echo) or
   as the first line of stdin when stdin is not a terminal. -t checks
   the password against HASH instead (exit 0 match, 1 mismatch).

   SECURITY: an admin tool run by hand; opens no socket and no file,
   needs no privileges. A password given with -p is visible in ps(1) to
   other local users: prefer the prompt. */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "strfuncs.h"
#include "password-scheme.h"
#include "password-generate.h"

#include <getopt.h>
#include <termios.h>

#define MOAT_PW_DEFAULT_SCHEME "SHA512-CRYPT"
/* One line of input: PASSWORD_MAX_LENGTH plus the newline and NUL. */
#define MOAT_PW_LINE_MAX (PASSWORD_MAX_LENGTH + 2)

static void ATTR_NORETURN moat_pw_usage(void)
{
	fprintf(stderr, "usage: moat-pw [-s scheme] [-r rounds] [-p password] "
		"[-t hash]\n"
		"schemes: SHA512-CRYPT (default) SHA256-CRYPT BLF-CRYPT "
		"MD5-CRYPT CRYPT ARGON2ID ARGON2I PBKDF2 SSHA512 SSHA256 "
		"SCRAM-SHA-256 SCRAM-SHA-1 PLAIN\n");
	exit(2);
}

static int moat_pw_read_line(const char *prompt, bool tty, char *buf)
{
	struct termios old, noecho;
	size_t len;
	char *ret;

	if (tty) {
		fputs(prompt, stderr);
		fflush(stderr);
		(void)tcgetattr(STDIN_FILENO, &old);
		noecho = old;
		noecho.c_lflag &= ~ECHO;
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &noecho);
	}
	ret = fgets(buf, MOAT_PW_LINE_MAX, stdin);
	if (tty) {
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (ret == NULL)
		return -1;
	len = strlen(buf);
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if (len == MOAT_PW_LINE_MAX - 1)
		return -1;
	return 0;
}

static char *moat_pw_ask(void)
{
	static char pw1[MOAT_PW_LINE_MAX], pw2[MOAT_PW_LINE_MAX];
	bool tty = isatty(STDIN_FILENO) != 0;

	if (moat_pw_read_line("Enter new password: ", tty, pw1) < 0)
		i_fatal("could not read the password (too long?)");
	if (tty) {
		if (moat_pw_read_line("Retype new password: ", tty, pw2) < 0)
			i_fatal("could not read the password");
		if (strcmp(pw1, pw2) != 0)
			i_fatal("passwords do not match");
		safe_memset(pw2, 0, sizeof(pw2));
	}
	return pw1;
}

int main(int argc, char *argv[])
{
	const char *scheme = MOAT_PW_DEFAULT_SCHEME, *test_hash = NULL;
	const char *result, *error;
	char *password = NULL;
	unsigned int rounds = 0;
	pool_t pool;
	int c, ret;

	log_init("moat-pw: ", false);
	while ((c = getopt(argc, argv, "s:r:p:t:")) != -1) {
		switch (c) {
		case 's': scheme = optarg; break;
		case 'p': password = optarg; break;
		case 't': test_hash = optarg; break;
		case 'r':
			if (str_to_uint(optarg, &rounds) < 0)
				moat_pw_usage();
			break;
		default: moat_pw_usage();
		}
	}
	if (optind != argc)
		moat_pw_usage();
	if (password == NULL)
		password = moat_pw_ask();
	if (test_hash != NULL) {
		ret = password_verify(password, test_hash, "CRYPT", &error);
		if (ret < 0)
			i_fatal("%s", error);
		printf("%s\n", ret > 0 ? "verified" : "mismatch");
		return ret > 0 ? 0 : 1;
	}
	pool = pool_create("moat-pw", 1024);
	result = password_generate(pool, scheme, password, rounds, &error);
	if (result == NULL)
		i_fatal("%s", error);
	printf("%s\n", result);
	pool_unref(&pool);
	return 0;
}
