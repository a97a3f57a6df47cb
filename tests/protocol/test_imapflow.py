"""A real client library against moat's CONDSTORE and QRESYNC: imapflow
(npm; ./dev.sh test installs it into build/test/node). Its cached view of
INBOX, kept between runs by clients/imapflow-sync.js, must equal the
server's after each round of random changes by another session: once
resyncing with SELECT (QRESYNC ...), once with CONDSTORE's FETCH
(CHANGEDSINCE) and a UID SEARCH. The QRESYNC resync runs both over
COMPRESS=DEFLATE (imapflow negotiates it when offered) and without.
test_imapflow_objectid reads RFC 8474's ids through imapflow
(clients/imapflow-objectid.js). Skipped only when node or imapflow is
missing."""

import json
import os
import pathlib
import random
import shutil
import subprocess

import pytest

from test_condstore import ok
from test_qresync_model import full_fetch, other_session_op

HERE = pathlib.Path(__file__).parent
ROUNDS = 15
NODE_TIMEOUT = 60.0   # seconds one run may take on a busy machine


def node_modules():
    path = os.environ.get("MOAT_NODE_MODULES")
    if path:
        return pathlib.Path(path)
    prefix = os.environ.get("MOAT_PREFIX")
    base = pathlib.Path(prefix).parent if prefix else HERE.parents[1] / "build/test"
    return base / "node" / "node_modules"


def need_imapflow():
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (dev.sh installs it)")
    modules = node_modules()
    if not (modules / "imapflow").is_dir():
        pytest.skip(f"imapflow is not installed in {modules} (dev.sh installs it)")
    return node, modules


def run_sync(server, mode, state_path, comp="compress"):
    node, modules = need_imapflow()
    env = dict(os.environ, NODE_PATH=str(modules))
    p = subprocess.run([node, str(HERE / "clients" / "imapflow-sync.js"), mode,
                        str(server.port), "testuser1",
                        server.users["testuser1"]["password"], str(state_path),
                        comp],
                       env=env, capture_output=True, timeout=NODE_TIMEOUT)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return json.loads(state_path.read_text())


@pytest.mark.parametrize("mode,comp", [("qresync", "compress"),
                                       ("qresync", "plain"),
                                       ("condstore", "compress")])
def test_imapflow_resync(moat_server, tmp_path, mode, comp):
    need_imapflow()
    seed = random.randrange(10**9)
    print(f"seed {seed}")
    rng = random.Random(seed)
    o = moat_server.login("testuser1")
    ok(o, "SELECT INBOX")
    for i in range(12):
        assert o.append("INBOX", f"Subject: {i}\r\n\r\nbody\r\n".encode()).ok
    state_path = tmp_path / "state.json"
    state = run_sync(moat_server, mode, state_path, comp)
    assert state["compressed"] == (comp == "compress")
    vanished = changed = 0
    for _ in range(ROUNDS):
        for _ in range(rng.randint(1, 4)):
            other_session_op(rng, o, len(full_fetch(o)))
        ok(o, "NOOP")
        state = run_sync(moat_server, mode, state_path, comp)
        truth = {str(uid): sorted(f) for uid, f in full_fetch(o).items()}
        assert state["flags"] == truth, (state, truth)
        vanished += state["vanished"]
        changed += state["changed"]
    # the resyncs did report changes and expunges (not a full refetch)
    assert vanished > 0 and changed > 0


def test_imapflow_objectid(moat_server):
    """RFC 8474 through imapflow: mailboxId from CREATE and SELECT,
    emailId and threadId from FETCH, SEARCH by them, and the ids of a
    moved message, all equal to what moat answers a raw session."""
    node, modules = need_imapflow()
    from test_objectid import (MESSAGE_A, MESSAGE_B, MESSAGE_C, ids,
                               status_id)
    o = moat_server.login("testuser1")
    for m in (MESSAGE_A, MESSAGE_B, MESSAGE_C):
        assert o.append("INBOX", m).ok
    ok(o, "EXAMINE INBOX")
    truth = ids(o)
    ok(o, "UNSELECT")
    env = dict(os.environ, NODE_PATH=str(modules))
    p = subprocess.run([node, str(HERE / "clients" / "imapflow-objectid.js"),
                        str(moat_server.port), "testuser1",
                        moat_server.users["testuser1"]["password"]],
                       env=env, capture_output=True, timeout=NODE_TIMEOUT)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    got = json.loads(p.stdout)
    assert got["createdId"] == got["movedId"] == \
        status_id(o, "Moved").decode()
    assert got["inboxId"] == status_id(o, "INBOX").decode()
    assert [(m["emailId"], m["threadId"]) for m in got["messages"]] == \
        [(e.decode(), t.decode()) for _, (e, t) in sorted(truth.items())]
    assert got["byEmail"] == [1] and got["byThread"] == [1, 2]
    assert [(m["emailId"], m["threadId"]) for m in got["movedMessages"]] \
        == [(got["messages"][0]["emailId"], got["messages"][0]["threadId"])]


def test_imapflow_utf8_accept(moat_server):
    """RFC 6855 through imapflow, which ENABLEs UTF8=ACCEPT (and
    IMAP4rev2) when offered: a UTF-8 folder name it creates is the
    modified UTF-7 one a legacy session lists, and a message with raw
    UTF-8 headers comes back unchanged (clients/imapflow-utf8.js)."""
    node, modules = need_imapflow()
    env = dict(os.environ, NODE_PATH=str(modules))
    p = subprocess.run([node, str(HERE / "clients" / "imapflow-utf8.js"),
                        str(moat_server.port), "testuser1",
                        moat_server.users["testuser1"]["password"]],
                       env=env, capture_output=True, timeout=NODE_TIMEOUT)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    got = json.loads(p.stdout)
    assert "UTF8=ACCEPT" in got["enabled"], got
    assert "Entw\u00fcrfe/\u65e5\u672c" in got["paths"], got
    assert got["subject"] == "\u00dcberweisung f\u00fcr M\u00e4rz", got
    assert got["from"] == ["j\u00f6rg@b\u00fccher.example"], got
    assert got["sourceEqual"] and got["search"] == [1], got
    o = moat_server.login("testuser1")
    r = o.command('LIST "" "Entw*"')
    assert b'* LIST (\\HasNoChildren) "/" Entw&APw-rfe/&ZeVnLA-' in \
        r.untagged, r
