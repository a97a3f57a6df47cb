"""The test client's own parsing (no server): what the other tests rely on."""

from moatimap import Response


def test_fetches_follow_expunge_renumbering():
    # The end of a UID FETCH when another session expunged meanwhile
    # (RFC 9051 7.5.1): after "* 2 EXPUNGE" the message that was number 4
    # (UID 15) is number 3, and its flag update names it so.
    r = Response(b"a1", b"a1 OK done", [
        b"* 1 FETCH (UID 6 FLAGS ())",
        b"* 3 FETCH (UID 13 FLAGS () BODY[] {3}\r\nabc)",
        b"* 4 FETCH (UID 15 FLAGS () BODY[] {3}\r\nxyz)",
        b"* 2 EXPUNGE",
        b"* 3 FETCH (UID 15 FLAGS (\\Flagged))",
    ])
    f = r.fetches()
    assert sorted(f) == [1, 2, 3]
    assert f[2]["UID"] == "13" and f[2]["BODY[]"] == b"abc"
    assert f[3]["UID"] == "15" and f[3]["BODY[]"] == b"xyz"
    assert [str(x) for x in f[3]["FLAGS"]] == ["\\Flagged"]


def test_fetches_drop_an_expunged_message():
    r = Response(b"a1", b"a1 OK done", [
        b"* 2 FETCH (UID 7 FLAGS ())",
        b"* 2 EXPUNGE",
    ])
    assert r.fetches() == {}
