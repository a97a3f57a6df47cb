"""One group commit for APPENDs and LMTP deliveries (imap/imap-commit.h,
doc/durability.md "Group commit"): sessions APPENDing and LMTP
connections delivering into the same mailbox of one user at the same
time all get their OK / 250, with distinct UIDs, and every acknowledged
message is there exactly once after a restart."""

import re
import threading

import pytest

from test_append_group import appenduids, message, uid_by_mid
from test_lmtp import Lmtp, data, start

pytestmark = pytest.mark.moat_settings(lmtp=True, log_debug="yes")

GROUP_RE = re.compile(r"group commit: (\d+) requests, (\d+) messages")


def delivery(mid):
    return (f"From: sender@example.org\r\nMessage-ID: <{mid}>\r\n"
            f"Subject: {mid}\r\n\r\ndelivered {mid}\r\n").encode()


def run_mixed(moat_server, appenders, deliverers, per_worker, box="INBOX"):
    """appenders sessions APPEND and deliverers LMTP connections deliver
    per_worker messages each into box, all at once. Returns
    ({mid: uid} of the APPENDs, [mids] of the 250s, [errors])."""
    clients = [moat_server.login() for _ in range(appenders)]
    acked, delivered, errors = {}, [], []
    lock = threading.Lock()
    barrier = threading.Barrier(appenders + deliverers)

    def append(n, c):
        barrier.wait()
        for k in range(per_worker):
            mid = f"a{n}m{k}@test"
            r = c.append(box, message(mid))
            with lock:
                if not r.ok:
                    errors.append(f"append {mid}: {r}")
                    continue
                acked[mid] = appenduids(r)[1][0]

    def deliver(n):
        c = Lmtp(moat_server)
        assert c.cmd("LHLO client.example")[0] == 250
        barrier.wait()
        for k in range(per_worker):
            mid = f"d{n}m{k}@test"
            assert c.cmd("MAIL FROM:<sender@example.org>")[0] == 250
            rcpt = "testuser1" if box == "INBOX" else f"testuser1+{box}"
            assert c.cmd(f"RCPT TO:<{rcpt}>")[0] == 250
            code = data(c, delivery(mid), 1)[0]
            with lock:
                if code[0] != 250:
                    errors.append(f"deliver {mid}: {code}")
                else:
                    delivered.append(mid)
        c.cmd("QUIT")
        c.close()

    threads = [threading.Thread(target=append, args=(n, c))
               for n, c in enumerate(clients)]
    threads += [threading.Thread(target=deliver, args=(n,))
                for n in range(deliverers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads)
    return acked, delivered, errors


def test_appends_and_deliveries_into_one_mailbox(moat_server):
    """6 sessions APPEND and 6 LMTP connections deliver into INBOX at
    once: every OK and 250, distinct UIDs, and after a restart every
    acknowledged message is there once, APPENDs with the UID they were
    given."""
    per = 6
    acked, delivered, errors = run_mixed(moat_server, 6, 6, per)
    assert not errors, errors
    assert len(acked) == 6 * per and len(delivered) == 6 * per
    assert len(set(acked.values())) == len(acked)

    moat_server.close_clients()
    assert moat_server.stop()[0] == 0
    moat_server.start()
    c = moat_server.login()
    found, exists = uid_by_mid(c, "INBOX")
    assert exists == 12 * per
    for mid, uid in acked.items():
        assert found.get(mid) == uid, mid
    for mid in delivered:
        assert mid in found, mid
    assert set(found) == set(acked) | set(delivered)
    assert len(set(found.values())) == len(found)
    # the batches were logged, and every message went through them
    logs = moat_server.logs()
    groups = [(int(r), int(m)) for r, m in GROUP_RE.findall(logs)]
    assert sum(m for _, m in groups) >= 12 * per, groups
    # by the sync thread, under the imap process's seccomp filter
    assert "synced by the sync thread" in logs


@pytest.mark.moat_settings(lmtp=True, log_debug="yes",
                           lmtp_save_to_detail_mailbox="yes")
def test_appends_and_deliveries_into_a_folder(moat_server):
    """The same into another folder (+detail deliveries), with a
    MULTIAPPEND session beside it that keeps its own syncs."""
    setup = moat_server.login()
    assert setup.command("CREATE Shared").ok
    multi_uids = []

    def multiappend():
        m = setup
        for k in range(3):
            tag = m.next_tag()
            payload = f"{tag} APPEND Shared".encode()
            for j in range(3):
                msg = message(f"multi{k}p{j}@test")
                payload += b" {%d+}\r\n" % len(msg) + msg
            m.send(payload + b"\r\n")
            r = m.read_tagged(tag)
            assert r.ok, r
            multi_uids.extend(appenduids(r)[1])
    t = threading.Thread(target=multiappend)
    t.start()
    acked, delivered, errors = run_mixed(moat_server, 4, 4, 4, box="Shared")
    t.join(120)
    assert not errors, errors
    assert len(multi_uids) == 9
    assert not set(multi_uids) & set(acked.values())

    moat_server.close_clients()
    assert moat_server.stop()[0] == 0
    moat_server.start()
    c = moat_server.login()
    found, exists = uid_by_mid(c, "Shared")
    assert exists == 16 + 16 + 9
    for mid, uid in acked.items():
        assert found.get(mid) == uid, mid
    assert all(mid in found for mid in delivered)
    assert sorted(found[f"multi{k}p{j}@test"] for k in range(3)
                  for j in range(3)) == sorted(multi_uids)
