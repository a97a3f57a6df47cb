"""i;unicode-casemap (RFC 5051) in SORT, THREAD and SEARCH (RFC 5256
section 7, RFC 9051 6.4.4), Message-ID shapes in THREAD REFERENCES and
SEARCH FROM/TO/CC/BCC on the envelope's address form. Expected answers
are worked out from the RFCs by hand."""

import os

import pytest

BASE = 1704888000   # 2024-01-10 12:00 UTC


def msg(headers, body=b"body\r\n"):
    return b"".join(h.encode() + b"\r\n" for h in headers) + b"\r\n" + body


def place(server, messages, user="testuser1"):
    md = server.maildir(user)
    for i, content in enumerate(messages):
        path = md / "cur" / f"{1704800000 + i}.M{i}P200.moattest:2,S"
        path.write_bytes(content)
        os.utime(path, (BASE + i, BASE + i))
    server.chown_home(server.users[user])


def session(server, messages):
    place(server, messages)
    c = server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    return c


def untagged_nums(r, word):
    lines = r.untagged_with(word)
    assert len(lines) == 1, r
    return [int(n) for n in lines[0].split()[2:]]


def sort(c, program):
    r = c.command(f"SORT {program}")
    assert r.ok, (program, r)
    return untagged_nums(r, "SORT")


def thread(c, args):
    r = c.command(f"THREAD {args}")
    assert r.ok, (args, r)
    lines = r.untagged_with("THREAD")
    assert len(lines) == 1, r
    return lines[0].decode()[len("* THREAD"):].strip()


def search(c, program):
    r = c.command(f"SEARCH {program}")
    assert r.ok, (program, r)
    return untagged_nums(r, "SEARCH")


def subject_msg(subject, minute, extra=()):
    return msg([f"From: a@example.org",
                f"Date: Wed, 10 Jan 2024 10:{minute:02d}:00 +0000",
                f"Subject: {subject}", f"Message-ID: <s{minute}@example.org>",
                *extra])


# Base subjects and their i;unicode-casemap forms (titlecase, then NFKD):
SUBJECTS = [
    "banana",                                 # 1 BANANA
    "=?UTF-8?Q?=C3=84pfel?=",                 # 2 A U+0308 PFEL
    "Apple",                                  # 3 APPLE
    "=?UTF-8?B?77yi77yh77yu77yh77yu77yh?=",   # 4 fullwidth BANANA: BANANA
    "Re: BANANA",                             # 5 BANANA
    "=?UTF-8?Q?Re:=C2=A0apple?=",             # 6 NBSP after Re: APPLE
    "=?UTF-8?Q?=EF=AC=81ne?=",                # 7 U+FB01: fiNE
    "Fine",                                   # 8 FINE
    "[list] Apple (fwd)",                     # 9 APPLE
    "=?ISO-8859-1?Q?=C4pfel?=",               # 10 A U+0308 PFEL
    "A_b",                                    # 11 A_B: "_" (0x5f) after P
    "Ab",                                     # 12 AB
]


def test_sort_subject_casemap(moat_server):
    c = session(moat_server, [subject_msg(s, i) for i, s in enumerate(SUBJECTS)])
    # AB (12) < APPLE (3 6 9) < A_B (11) < A U+0308 PFEL (2 10)
    # < BANANA (1 4 5) < FINE (8) < fiNE (7); ties in mailbox order
    assert sort(c, "(SUBJECT) UTF-8 ALL") == [12, 3, 6, 9, 11, 2, 10,
                                               1, 4, 5, 8, 7]
    assert sort(c, "(REVERSE SUBJECT) UTF-8 ALL") == [7, 8, 1, 4, 5, 2, 10,
                                                       11, 3, 6, 9, 12]
    # one thread per base subject, by the first message's date
    assert thread(c, "ORDEREDSUBJECT UTF-8 ALL") == \
        "(1 (4)(5))(2 10)(3 (6)(9))(7)(8)(11)(12)"


def test_thread_references_subject_merge(moat_server):
    # no references: threads are joined by base subject (step 5), and
    # "Café" written two ways (precomposed, and e + U+0301) is one subject
    msgs = [
        subject_msg("=?UTF-8?Q?Caf=C3=A9?=", 0),
        subject_msg("Re: =?UTF-8?Q?CAFE=CC=81?=", 1),
        subject_msg("=?UTF-8?Q?caf=C3=A9?=", 2),
        subject_msg("cafe", 3),
    ]
    c = session(moat_server, msgs)
    # 2 is a reply and 1 is not: 2 becomes 1's child; 3 neither: both
    # go under a dummy parent; "cafe" is another subject
    assert thread(c, "REFERENCES UTF-8 ALL") == "((1 2)(3))(4)"


def test_thread_msgid_shapes(moat_server):
    """Replies link to parents whose Message-ID has an empty side, a
    comment, spaces, or a quoted local part; ids without angle brackets
    or without '@' are not ids (RFC 5256, as Dovecot 2.3 does)."""
    pairs = [
        ("<87y0pmj4uc.fsf@>", "References: <87y0pmj4uc.fsf@>", True),
        ("<@left.empty>", "In-Reply-To: <@left.empty>", True),
        ("<cm@example.com> (comment)", "References: (c) <cm@example.com>", True),
        ("< sp @ example.com >", "References: <sp@example.com>", True),
        ('<"qq"@example.com>', "References: <qq@example.com>", True),
        ("<a(b).c@example.com>", "References: <a.c@example.com>", True),
        ("noangle@example.com", "References: <noangle@example.com>", False),
        ("<nodomain>", "References: <nodomain>", False),
        ("<Case@example.com>", "References: <case@example.com>", False),
    ]
    msgs = []
    for i, (pid, ref, _) in enumerate(pairs):
        msgs.append(msg(["From: a@example.org", f"Subject: parent {i}",
                         f"Date: Wed, 10 Jan 2024 1{i}:00:00 +0000",
                         f"Message-ID: {pid}"]))
        msgs.append(msg(["From: b@example.org", f"Subject: child {i}",
                         f"Date: Wed, 10 Jan 2024 1{i}:30:00 +0000",
                         f"Message-ID: <child{i}@example.org>", ref]))
    c = session(moat_server, msgs)
    want = "".join(f"({2 * i + 1} {2 * i + 2})" if linked
                   else f"({2 * i + 1})({2 * i + 2})"
                   for i, (_, _, linked) in enumerate(pairs))
    assert thread(c, "REFERENCES UTF-8 ALL") == want


ADDRESS_MSGS = [
    msg(["From: John (the man) Doe <john (x) @ (y) example.com>",
         "To: john . doe @ example . com",
         "Cc: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <jm@example.org>",
         "Subject: =?UTF-8?Q?Caf=C3=A9=C2=A0cr=C3=A8me?="],
        "Stra\u00dfe \uff21\uff22\uff23 \ufb01sh\r\n".encode()),
    msg(["From: jane@example.net (Jane Roe)",
         "To: team: a@b.example, \"Doe, Jane\" <jane@x.example>;",
         "Subject: plain"]),
]


@pytest.mark.parametrize("key, expect", [
    # the address form (ENVELOPE's parse of the addr-spec)
    ("FROM john@example.com", [1]),
    ('FROM "John Doe <john@example.com>"', [1]),
    ("TO john.doe@example.com", [1]),
    ('CC "j\u00fcrgen m\u00fcller <JM@EXAMPLE.ORG>"', [1]),
    ('FROM "Jane Roe <jane@example.net>"', [2]),
    ('TO "team: a@b.example, Doe, Jane <jane@x.example>;"', [2]),
    # the header text as written still matches
    ('FROM "(the man)"', [1]),
    ('TO "example . com"', [1]),
    ('FROM "(Jane Roe)"', [2]),
    # i;unicode-casemap: accents decompose, NBSP is a space, case folds
    ("SUBJECT cafe", [1]),
    ('SUBJECT "CAF\u00c9 CR\u00c8ME"', [1]),
    # the mark stays between the letters: "crème" is C R E U+0300 M E
    ("SUBJECT cre", [1]),
    ("SUBJECT creme", []),
    ("BODY abc", [1]),
    ("BODY \u00df", [1]),
    ("BODY strasse", []),
    ("BODY \ufb01", [1]),
    ("BODY fish", []),
])
def test_search_casemap_and_addresses(moat_server, key, expect):
    c = session(moat_server, ADDRESS_MSGS)
    r = c.command(f"SEARCH CHARSET UTF-8 {key}")
    assert r.ok, r
    assert untagged_nums(r, "SEARCH") == expect
