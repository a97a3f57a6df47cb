"""A message file read by a search (SEARCH, or the search part of SORT and
THREAD) fills its ENVELOPE in the mail cache (imap/imap-fetch-cache.h,
imap_msg_fill), so the FETCH ENVELOPE after it opens no message file. The
SORT and THREAD keys' reader does not fill (it made the first THREAD about
3x slower, imap/imap-sort.c): after a THREAD or SORT of ALL the FETCH
still parses.

The imap process's FETCH debug line counts the files each FETCH opened.
The same messages are in a second mailbox that nothing searched: FETCH
parses them there, and its ENVELOPEs must equal the ones filled by the
search, byte for byte."""

import re

import pytest

from test_fetch_cache import N_MESSAGES, DEBUG_RE, debug_lines, message

OTHER = "Parsed"


def fill_two(server):
    c = server.login()
    assert c.command(f"CREATE {OTHER}").ok
    for i in range(N_MESSAGES):
        for box in ("INBOX", OTHER):
            r = c.append(box, message(i))
            assert r.ok, r
    return c


def envelopes(c, box):
    assert c.command(f"EXAMINE {box}").ok
    r = c.command("FETCH 1:* (FLAGS ENVELOPE)")
    assert r.ok, r
    assert len(r.untagged) == N_MESSAGES, r
    # FLAGS differ by who took \Recent: compare the ENVELOPEs only
    return [re.search(rb"ENVELOPE (.*)\)", x, re.S).group(1)
            for x in r.untagged]


# (the command, whether the files it reads fill the ENVELOPEs)
COMMANDS = [
    ("SEARCH TEXT body", True),
    ("UID SEARCH BODY part", True),
    ("SEARCH HEADER Subject plain", True),
    ("SEARCH FROM example", True),
    ("SORT (DATE) UTF-8 TEXT inner", True),
    # the keys' reader reads the files but does not fill
    ("UID THREAD REFERENCES UTF-8 ALL", False),
    ("THREAD ORDEREDSUBJECT UTF-8 ALL", False),
    ("UID SORT (SUBJECT) UTF-8 ALL", False),
    # cheap keys only: no file is read, so the FETCH parses them all
    ("SEARCH ALL", False),
    ("SORT (ARRIVAL) UTF-8 ALL", False),
]


@pytest.mark.moat_settings(log_debug="yes")
@pytest.mark.parametrize("command,reads", COMMANDS,
                         ids=[c for c, _ in COMMANDS])
def test_fetch_after_search_opens_no_file(moat_server, command, reads):
    c = fill_two(moat_server)
    assert c.command("EXAMINE INBOX").ok
    r = c.command(command)
    assert r.ok, r
    filled = envelopes(c, "INBOX")
    parsed = envelopes(c, OTHER)
    assert filled == parsed
    stats = debug_lines(moat_server, 2, DEBUG_RE)
    # (messages, files opened, texts from the cache, texts parsed)
    if reads:
        assert stats[0] == (N_MESSAGES, 0, N_MESSAGES, 0), stats
    else:
        assert stats[0] == (N_MESSAGES, N_MESSAGES, 0, N_MESSAGES), stats
    assert stats[1] == (N_MESSAGES, N_MESSAGES, 0, N_MESSAGES), stats


@pytest.mark.moat_settings(log_debug="yes")
def test_search_fill_survives_a_new_session(moat_server):
    """The filled values are on disk: another session (and the second
    SEARCH, which finds them cached) serves them without parsing."""
    c = fill_two(moat_server)
    assert c.command("SELECT INBOX").ok
    assert c.command("SEARCH TEXT body").ok
    assert c.command("SEARCH TEXT body").ok
    c2 = moat_server.login()
    filled = envelopes(c2, "INBOX")
    assert filled == envelopes(c2, OTHER)
    stats = debug_lines(moat_server, 2, DEBUG_RE)
    assert stats[0] == (N_MESSAGES, 0, N_MESSAGES, 0), stats
