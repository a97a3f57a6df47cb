/* Unit tests for lib/ktls.c: record classification from the control
   message, reads on sockets without the ULP, and (where the kernel has the
   "tls" ULP) real kernel TLS sockets with fixed test keys: data, a
   handshake record we must refuse, and close_notify as EOF. */
#include "test-common.h"
#include "ktls.h"
#include "log.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/tls.h>
#include <arpa/inet.h>

#ifndef SOL_TLS
#  define SOL_TLS 282
#endif

/* Room for one cmsg carrying a record type, as the kernel fills it in. */
struct test_msg {
	struct msghdr msg;
	union {
		struct cmsghdr align;
		unsigned char buf[CMSG_SPACE(1)];
	} control;
};

static void test_msg_init(struct test_msg *tm, int level, int type,
			  int record_type)
{
	memset(tm, 0, sizeof(*tm));
	if (record_type < 0)
		return;
	tm->msg.msg_control = tm->control.buf;
	tm->msg.msg_controllen = sizeof(tm->control.buf);
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&tm->msg);
	cmsg->cmsg_level = level;
	cmsg->cmsg_type = type;
	cmsg->cmsg_len = CMSG_LEN(1);
	*CMSG_DATA(cmsg) = (unsigned char)record_type;
}

static void test_classify(void)
{
	static const unsigned char close_notify[] = { 1, 0 };
	static const unsigned char bad_mac[] = { 2, 20 };
	static const unsigned char key_update[] = { 24, 0, 0, 1, 0 };
	static const unsigned char text[] = "a1 NOOP\r\n";
	struct test_msg tm;
	unsigned int detail;

	/* No control message at all: a socket without the ULP. */
	test_msg_init(&tm, 0, 0, -1);
	test_assert(ktls_classify(&tm.msg, text, sizeof(text) - 1, &detail) ==
		    KTLS_RESULT_DATA);
	test_msg_init(&tm, SOL_TLS, TLS_GET_RECORD_TYPE,
		      KTLS_RECORD_APPLICATION_DATA);
	test_assert(ktls_classify(&tm.msg, text, sizeof(text) - 1, &detail) ==
		    KTLS_RESULT_DATA);
	test_msg_init(&tm, SOL_TLS, TLS_GET_RECORD_TYPE, KTLS_RECORD_ALERT);
	test_assert(ktls_classify(&tm.msg, close_notify, 2, &detail) ==
		    KTLS_RESULT_CLOSE_NOTIFY);
	test_assert(ktls_classify(&tm.msg, bad_mac, 2, &detail) ==
		    KTLS_RESULT_ALERT);
	test_assert_int(detail, 20);
	/* A truncated alert is not mistaken for close_notify. */
	test_assert(ktls_classify(&tm.msg, close_notify, 1, &detail) ==
		    KTLS_RESULT_ALERT);
	test_msg_init(&tm, SOL_TLS, TLS_GET_RECORD_TYPE, KTLS_RECORD_HANDSHAKE);
	test_assert(ktls_classify(&tm.msg, key_update, sizeof(key_update),
				  &detail) == KTLS_RESULT_HANDSHAKE);
	test_assert_int(detail, 24);
	test_msg_init(&tm, SOL_TLS, TLS_GET_RECORD_TYPE, 20);
	test_assert(ktls_classify(&tm.msg, text, 1, &detail) ==
		    KTLS_RESULT_UNKNOWN);
	test_assert_int(detail, 20);
	/* Another level's cmsg with the same type number is not ours. */
	test_msg_init(&tm, SOL_SOCKET, TLS_GET_RECORD_TYPE, KTLS_RECORD_ALERT);
	test_assert(ktls_classify(&tm.msg, close_notify, 2, &detail) ==
		    KTLS_RESULT_DATA);
}

/* A connected TCP pair on loopback; -1 in fds[0] if that failed. */
static void tcp_pair(int fds[2])
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int listen_fd;

	fds[0] = fds[1] = -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (void *)&sin, sizeof(sin)) < 0 ||
	    listen(listen_fd, 1) < 0 ||
	    getsockname(listen_fd, (void *)&sin, &len) < 0) {
		test_assert(!"loopback listener");
		if (listen_fd >= 0)
			close(listen_fd);
		return;
	}
	fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	test_assert(connect(fds[1], (void *)&sin, sizeof(sin)) == 0);
	fds[0] = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	test_assert(fds[0] >= 0);
	close(listen_fd);
}

static void test_plain_sockets(void)
{
	int fds[2];
	char buf[64];

	test_assert(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	test_assert(!ktls_is_active(fds[0]));
	test_assert(write(fds[1], "abc", 3) == 3);
	test_assert_int(ktls_read((void *)(intptr_t)fds[0], buf, sizeof(buf)), 3);
	test_assert(memcmp(buf, "abc", 3) == 0);
	close(fds[1]);
	test_assert_int(ktls_read((void *)(intptr_t)fds[0], buf, sizeof(buf)), 0);
	close(fds[0]);

	tcp_pair(fds);
	if (fds[0] < 0)
		return;
	test_assert(!ktls_is_active(fds[0]));
	close(fds[0]);
	close(fds[1]);
}

/* Attach the ULP and the same fixed TLS 1.2 AES-128-GCM keys in both
   directions. false if the kernel has no tls ULP (the test is skipped). */
static bool ktls_setup(int fd)
{
	struct tls12_crypto_info_aes_gcm_128 info;

	if (setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) < 0)
		return false;
	memset(&info, 0, sizeof(info));
	info.info.version = TLS_1_2_VERSION;
	info.info.cipher_type = TLS_CIPHER_AES_GCM_128;
	memset(info.key, 0x42, sizeof(info.key));
	memset(info.salt, 0x17, sizeof(info.salt));
	memset(info.iv, 0x01, sizeof(info.iv));
	test_assert(setsockopt(fd, SOL_TLS, TLS_TX, &info, sizeof(info)) == 0);
	test_assert(setsockopt(fd, SOL_TLS, TLS_RX, &info, sizeof(info)) == 0);
	return true;
}

static void send_record(int fd, unsigned char type, const void *data,
			size_t size)
{
	union {
		struct cmsghdr align;
		unsigned char buf[CMSG_SPACE(1)];
	} control;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = size };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

	memset(control.buf, 0, sizeof(control.buf));
	cmsg->cmsg_level = SOL_TLS;
	cmsg->cmsg_type = TLS_SET_RECORD_TYPE;
	cmsg->cmsg_len = CMSG_LEN(1);
	*CMSG_DATA(cmsg) = type;
	test_assert(sendmsg(fd, &msg, 0) == (ssize_t)size);
}

static void test_kernel_tls(void)
{
	static const unsigned char key_update[] = { 24, 0, 0, 1, 0 };
	int fds[2];
	char buf[64];

	tcp_pair(fds);
	if (fds[0] < 0)
		return;
	if (!ktls_setup(fds[0])) {
		printf("SKIP test_kernel_tls: the kernel has no tls ULP (%s)\n",
		       strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	test_assert(ktls_setup(fds[1]));
	test_assert(ktls_is_active(fds[0]));
	void *ctx = (void *)(intptr_t)fds[0];

	/* Plain write() on the peer is application data. */
	test_assert(write(fds[1], "a1 NOOP\r\n", 9) == 9);
	test_assert_int(ktls_read(ctx, buf, sizeof(buf)), 9);
	test_assert(memcmp(buf, "a1 NOOP\r\n", 9) == 0);

	/* A KeyUpdate cannot be answered after a handoff: refused. */
	send_record(fds[1], KTLS_RECORD_HANDSHAKE, key_update,
		    sizeof(key_update));
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	log_set_fd(null_fd);
	errno = 0;
	test_assert_int(ktls_read(ctx, buf, sizeof(buf)), -1);
	test_assert_int(errno, EPROTO);
	log_set_fd(STDERR_FILENO);
	close(null_fd);

	/* The kernel keeps going after a control record; close_notify = EOF. */
	test_assert(write(fds[1], "x", 1) == 1);
	test_assert_int(ktls_read(ctx, buf, sizeof(buf)), 1);
	ktls_send_close_notify(fds[1]);
	test_assert_int(ktls_read(ctx, buf, sizeof(buf)), 0);
	close(fds[0]);
	close(fds[1]);
}

TEST_MAIN(TEST(test_classify), TEST(test_plain_sockets), TEST(test_kernel_tls))
