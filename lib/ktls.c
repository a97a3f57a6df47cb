/* Reading and closing a socket after a kernel TLS handoff (ktls.h). */
#include "lib.h"
#include "ktls.h"
#include "log.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/tls.h>

#ifndef SOL_TLS
#  define SOL_TLS 282
#endif
/* Longest name the kernel reports for TCP_ULP (TCP_ULP_NAME_MAX). */
#define KTLS_ULP_NAME_MAX 16
/* TLS 1.3 KeyUpdate (RFC 8446 4.6.3), named in the log line. */
#define KTLS_HANDSHAKE_KEY_UPDATE 24
#define KTLS_ALERT_CLOSE_NOTIFY 0

bool ktls_is_active(int fd)
{
	char name[KTLS_ULP_NAME_MAX + 1];
	socklen_t len = KTLS_ULP_NAME_MAX;

	memset(name, 0, sizeof(name));
	if (getsockopt(fd, IPPROTO_TCP, TCP_ULP, name, &len) < 0)
		return false;
	return strcmp(name, "tls") == 0;
}

enum ktls_record_result ktls_classify(const struct msghdr *msg,
				      const unsigned char *data, size_t size,
				      unsigned int *detail_r)
{
	struct cmsghdr *cmsg;
	unsigned char type = KTLS_RECORD_APPLICATION_DATA;

	*detail_r = 0;
	/* CMSG_FIRSTHDR takes a non-const msghdr but only reads it. */
	for (cmsg = CMSG_FIRSTHDR((struct msghdr *)msg); cmsg != NULL;
	     cmsg = CMSG_NXTHDR((struct msghdr *)msg, cmsg)) {
		if (cmsg->cmsg_level == SOL_TLS &&
		    cmsg->cmsg_type == TLS_GET_RECORD_TYPE &&
		    cmsg->cmsg_len >= CMSG_LEN(1))
			type = *CMSG_DATA(cmsg);
	}
	switch (type) {
	case KTLS_RECORD_APPLICATION_DATA:
		return KTLS_RESULT_DATA;
	case KTLS_RECORD_ALERT:
		/* level, description */
		if (size >= 2)
			*detail_r = data[1];
		return size >= 2 && data[1] == KTLS_ALERT_CLOSE_NOTIFY ?
			KTLS_RESULT_CLOSE_NOTIFY : KTLS_RESULT_ALERT;
	case KTLS_RECORD_HANDSHAKE:
		if (size >= 1)
			*detail_r = data[0];
		return KTLS_RESULT_HANDSHAKE;
	default:
		*detail_r = type;
		return KTLS_RESULT_UNKNOWN;
	}
}

ssize_t ktls_read(void *fd_ctx, void *buf, size_t size)
{
	int fd = (int)(intptr_t)fd_ctx;
	union {
		struct cmsghdr align;
		unsigned char buf[CMSG_SPACE(sizeof(unsigned char))];
	} control;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	unsigned int detail;
	ssize_t ret;

	ret = recvmsg(fd, &msg, 0);
	if (ret <= 0)
		return ret;
	switch (ktls_classify(&msg, buf, (size_t)ret, &detail)) {
	case KTLS_RESULT_DATA:
		return ret;
	case KTLS_RESULT_CLOSE_NOTIFY:
		return 0;
	case KTLS_RESULT_ALERT:
		i_debug("kTLS: the client sent TLS alert %u", detail);
		errno = ECONNRESET;
		return -1;
	case KTLS_RESULT_HANDSHAKE:
		i_info("kTLS: the client sent a TLS handshake message (type %u%s) "
		       "after the handoff; nobody holds the TLS state to answer "
		       "it, closing", detail,
		       detail == KTLS_HANDSHAKE_KEY_UPDATE ? ", KeyUpdate" : "");
		break;
	case KTLS_RESULT_UNKNOWN:
		i_info("kTLS: TLS record of content type %u after the handoff, "
		       "closing", detail);
		break;
	}
	errno = EPROTO;
	return -1;
}

void ktls_send_close_notify(int fd)
{
	/* alert level warning (1), close_notify (0) */
	unsigned char alert[2] = { 1, KTLS_ALERT_CLOSE_NOTIFY };
	union {
		struct cmsghdr align;
		unsigned char buf[CMSG_SPACE(sizeof(unsigned char))];
	} control;
	struct iovec iov = { .iov_base = alert, .iov_len = sizeof(alert) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

	memset(control.buf, 0, sizeof(control.buf));
	cmsg->cmsg_level = SOL_TLS;
	cmsg->cmsg_type = TLS_SET_RECORD_TYPE;
	cmsg->cmsg_len = CMSG_LEN(sizeof(unsigned char));
	*CMSG_DATA(cmsg) = KTLS_RECORD_ALERT;
	(void)sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}
