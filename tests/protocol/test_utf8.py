"""UTF8=ACCEPT (RFC 6855), section by section: ENABLE, UTF-8 quoted
strings and mailbox names (3), the UTF8 APPEND data item (4), SEARCH
without CHARSET (3), messages with raw UTF-8 headers (RFC 6532) for
enabled and legacy sessions (7, 8), and the same folders seen from both
modes and from IMAP4rev2 mode (RFC 9051 Appendix A). doc/extensions.md
says what moat chose."""

import re

UTF8_MSG = ("From: J\u00f6rg <j\u00f6rg@b\u00fccher.example>\r\n"
            "To: \u7528\u6237@\u4f8b\u5b50.\u5e7f\u544a\r\n"
            "Subject: \u00dcberweisung f\u00fcr M\u00e4rz\r\n"
            "Message-ID: <utf8-1@example.org>\r\n\r\n"
            "Gr\u00fc\u00dfe\r\n").encode()
ASCII_MSG = b"From: a@example.org\r\nSubject: plain\r\n\r\nbody\r\n"


def utf8_login(server, user="testuser1"):
    c = server.login(user)
    r = c.command("ENABLE UTF8=ACCEPT")
    assert r.ok and r.untagged == [b"* ENABLED UTF8=ACCEPT"], r
    return c


def list_names(r):
    """The mailbox names of the untagged LIST/LSUB lines, as sent."""
    names = []
    for line in r.untagged:
        m = re.match(rb'^\* (?:LIST|LSUB) \([^)]*\) "/" (.*)$', line)
        if m:
            names.append(m.group(1))
    return names


def send_literal8_append(c, box, message, extra=b"", sync=False):
    """APPEND box UTF8 (~{n}...) [extra]: the RFC 6855 section 4 form."""
    tag = c.next_tag()
    head = f"{tag} APPEND {box} (\\Seen) UTF8 (".encode()
    if sync:
        c.send(head + b"~{%d}\r\n" % len(message))
        r = c.read_tagged(tag)
        if r.status != "+":
            return r
        c.send(message + b")" + extra + b"\r\n")
    else:
        c.send(head + b"~{%d+}\r\n" % len(message) + message + b")" + extra +
               b"\r\n")
    return c.read_tagged(tag)


# -- section 3: capability and ENABLE


def test_advertised_after_login_only(moat_server):
    c = moat_server.connect()
    assert b"UTF8=ACCEPT" not in c.greeting
    c = moat_server.login()
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"UTF8=ACCEPT" in caps and b"UTF8=ONLY" not in caps, caps


def test_enable_once(moat_server):
    c = utf8_login(moat_server)
    r = c.command("ENABLE utf8=accept")
    assert r.ok and r.untagged == [b"* ENABLED"], r
    # UTF8=ONLY is never enabled (RFC 6855 section 6)
    r = c.command("ENABLE UTF8=ONLY")
    assert r.ok and r.untagged == [b"* ENABLED"], r
    c = moat_server.login()
    r = c.command("ENABLE IMAP4rev2 UTF8=ACCEPT CONDSTORE")
    assert r.ok and r.untagged == [b"* ENABLED IMAP4rev2 UTF8=ACCEPT "
                                   b"CONDSTORE"], r


# -- section 3: quoted strings


def test_invalid_utf8_quoted_is_bad(moat_server):
    c = utf8_login(moat_server)
    for bad in (b"\xff", b"caf\xe9", b"\xc3", b"\xe2\x82", b"\xc0\xaf",
                b"\xed\xa0\x80", b"\xf4\x90\x80\x80"):
        r = c.command(b'CREATE "x' + bad + b'"')
        assert r.status == "BAD" and b"UTF-8" in r.text, (bad, r)
    # the session goes on, and nothing was created
    r = c.command('LIST "" "x*"')
    assert r.ok and list_names(r) == [], r
    # valid 2-, 3- and 4-byte sequences are fine
    r = c.command('CREATE "x\u00e9\u20ac\U0001f600"'.encode())
    assert r.ok, r


def test_legacy_8bit_quoted_not_a_name(moat_server):
    """Without ENABLE a quoted 8-bit name is not modified UTF-7: NO, as
    before (RFC 3501 forbids 8-bit quoted strings; moat's parser keeps
    them for the commands that read them as bytes)."""
    c = moat_server.login()
    r = c.command('CREATE "caf\u00e9"'.encode())
    assert r.status == "NO" and r.code == "CANNOT", r


def test_utf8_in_literal_name_checked(moat_server):
    """A literal is not a quoted string (no BAD), but a mailbox name must
    still be UTF-8: NO [CANNOT]."""
    c = utf8_login(moat_server)
    r = c.command(b"CREATE {4+}\r\nx\xff\xfey")
    assert r.status == "NO" and r.code == "CANNOT", r
    r = c.command("CREATE {5+}\r\nb\u00e4r!".encode())
    assert r.ok, r
    r = c.command('LIST "" "b*"')
    assert list_names(r) == ['"b\u00e4r!"'.encode()], r


def test_forbidden_characters_in_names(moat_server):
    """RFC 6855 section 3: no controls (C0, DEL, C1), U+2028 or U+2029."""
    c = utf8_login(moat_server)
    for ch in ("\u0085", "\u2028", "\u2029", "\u009f"):
        r = c.command(f'CREATE "a{ch}b"'.encode())
        assert r.status == "NO" and r.code == "CANNOT", (ch, r)
    # the same refused in modified UTF-7 (U+2028 is &ICg-)
    c = moat_server.login()
    r = c.command("CREATE a&ICg-b")
    assert r.status == "NO" and r.code == "CANNOT", r


# -- section 3: mailbox names in both modes, on the same folders


def test_create_utf8_seen_as_mutf7(moat_server):
    u = utf8_login(moat_server)
    assert u.command('CREATE "Entw\u00fcrfe/2024"'.encode()).ok
    assert u.command('CREATE "R&D"').ok
    r = u.command('LIST "" "*"')
    names = list_names(r)
    assert '"Entw\u00fcrfe"'.encode() in names, names
    assert '"Entw\u00fcrfe/2024"'.encode() in names, names
    assert b"R&D" in names, names
    legacy = moat_server.login()
    names = list_names(legacy.command('LIST "" "*"'))
    assert b"Entw&APw-rfe" in names and b"Entw&APw-rfe/2024" in names, names
    assert b"R&-D" in names, names
    # on disk: Maildir++ with modified UTF-7 components, as before
    md = moat_server.maildir("testuser1")
    assert (md / ".Entw&APw-rfe.2024").is_dir()


def test_create_mutf7_seen_as_utf8(moat_server):
    legacy = moat_server.login()
    assert legacy.command("CREATE &ZeVnLIqe-").ok
    assert legacy.command("CREATE &AOk-t&AOk-").ok
    assert legacy.command("CREATE a&-b").ok
    u = utf8_login(moat_server)
    names = list_names(u.command('LIST "" "*"'))
    for want in ('"\u65e5\u672c\u8a9e"', '"\u00e9t\u00e9"', "a&b"):
        assert want.encode() in names, (want, names)
    # after ENABLE a name is UTF-8 only: "&AOk-t&AOk-" is that text
    r = u.command('SELECT "&AOk-t&AOk-"')
    assert r.status == "NO", r
    r = u.command('SELECT "\u00e9t\u00e9"'.encode())
    assert r.ok, r


def test_ampersand_names_are_distinct_in_utf8_mode(moat_server):
    """"&AOk-" sent in UTF-8 mode is the five characters, which legacy
    clients see as "&-AOk-"; the legacy "&AOk-" is "\u00e9"."""
    u = utf8_login(moat_server)
    assert u.command('CREATE "&AOk-"').ok
    assert u.command('CREATE "\u00e9"'.encode()).ok
    names = list_names(u.command('LIST "" "*"'))
    assert b"&AOk-" in names and '"\u00e9"'.encode() in names, names
    legacy = moat_server.login()
    names = list_names(legacy.command('LIST "" "*"'))
    assert b"&-AOk-" in names and b"&AOk-" in names, names


def test_rename_round_trip(moat_server):
    u = utf8_login(moat_server)
    legacy = moat_server.login()
    assert u.command('CREATE "\u00c4rger"'.encode()).ok
    r = legacy.command("RENAME &AMQ-rger &ANY-l")
    assert r.ok, r
    names = list_names(u.command('LIST "" "%"'))
    assert '"\u00d6l"'.encode() in names, names
    r = u.command('RENAME "\u00d6l" "\u00dcbel/\u00e4"'.encode())
    assert r.ok, r
    names = list_names(legacy.command('LIST "" "*"'))
    assert b"&ANw-bel/&AOQ-" in names and b"&ANY-l" not in names, names
    r = u.command(b'RENAME "\xc3\x9cbel/\xc3\xa4" "x\xff"')
    assert r.status == "BAD", r


def test_status_select_subscribe_lsub(moat_server):
    u = utf8_login(moat_server)
    name = "\u6536\u4ef6\u7bb1"
    q = f'"{name}"'.encode()
    assert u.command(b"CREATE " + q).ok
    r = u.command(b"STATUS " + q + b" (MESSAGES)")
    assert r.ok and r.untagged == [b"* STATUS " + q + b" (MESSAGES 0)"], r
    assert u.command(b"SUBSCRIBE " + q).ok
    r = u.command('LSUB "" "*"')
    assert q in list_names(r), r
    r = u.command('LIST (SUBSCRIBED) "" "\u6536*"'.encode())
    assert list_names(r) == [q], r
    # the legacy view of the same subscription
    legacy = moat_server.login()
    r = legacy.command('LSUB "" "*"')
    assert b"&ZTZO9nux-" in list_names(r), r
    r = u.command(b"SELECT " + q)
    assert r.ok, r
    assert u.command(b"UNSUBSCRIBE " + q).ok
    assert q not in list_names(u.command('LSUB "" "*"'))


def test_rev2_select_list_and_notify_names(moat_server):
    """IMAP4rev2's untagged LIST on SELECT (RFC 9051 6.3.2) and NOTIFY's
    LIST (RFC 5465) use the session's form of the name."""
    u = moat_server.login()
    r = u.command("ENABLE IMAP4rev2 UTF8=ACCEPT")
    assert r.ok, r
    assert u.command('CREATE "\u00e4\u00f6"'.encode()).ok
    r = u.command('SELECT "\u00e4\u00f6"'.encode())
    assert r.ok, r
    assert any(line.endswith('"/" "\u00e4\u00f6"'.encode())
               for line in r.untagged_with("LIST")), r
    assert u.command("NOTIFY SET (personal (MailboxName))").ok
    other = moat_server.login()
    assert other.command("CREATE &APw-").ok
    line = u.read_line_within(30)
    assert line is not None and line.endswith('"/" "\u00fc"'.encode()), line
    # RENAME's LIST carries OLDNAME (RFC 5465 5.4), in UTF-8 too
    assert other.command("RENAME &APw- &APY-").ok
    line = u.read_line_within(30)
    assert line is not None and line.endswith(
        '"/" "\u00f6" ("OLDNAME" ("\u00fc"))'.encode()), line


def test_rev2_alone_has_utf8_names(moat_server):
    """ENABLE IMAP4rev2 without UTF8=ACCEPT: names are UTF-8 too (RFC 9051
    5.1, Net-Unicode; modified UTF-7 stays for IMAP4rev1 sessions,
    Appendix A) and quoted strings are checked UTF-8; the UTF8 APPEND
    item and the SEARCH CHARSET rule stay RFC 6855's."""
    c = moat_server.login()
    assert c.command("ENABLE IMAP4rev2").ok
    assert c.command('CREATE "\u00fc&"'.encode()).ok
    assert '"\u00fc&"'.encode() in list_names(c.command('LIST "" "*"'))
    legacy = moat_server.login()
    assert b"&APw-&-" in list_names(legacy.command('LIST "" "*"'))
    r = c.command(b'SEARCH SUBJECT "\xff"')
    assert r.status == "BAD" and b"UTF-8" in r.text, r
    r = send_literal8_append(c, "INBOX", UTF8_MSG)
    assert r.status == "BAD", r
    assert c.command("SELECT INBOX").ok
    assert c.command("SEARCH CHARSET UTF-8 ALL").ok


# -- section 3: SEARCH


def test_search_charset_bad_after_enable(moat_server):
    c = moat_server.login()
    assert c.append("INBOX", UTF8_MSG).ok
    assert c.command("SELECT INBOX").ok
    # before ENABLE, CHARSET UTF-8 with a literal is how it is done
    r = c.command("SEARCH CHARSET UTF-8 SUBJECT {5+}\r\n\u00fcber".encode())
    assert r.ok and r.untagged == [b"* SEARCH 1"], r
    assert c.command("ENABLE UTF8=ACCEPT").ok
    for charset in ("UTF-8", "US-ASCII", "ISO-8859-1"):
        r = c.command(f"SEARCH CHARSET {charset} ALL")
        assert r.status == "BAD", r
    r = c.command('SEARCH SUBJECT "\u00fcber"'.encode())
    assert r.ok and r.untagged == [b"* SEARCH 1"], r
    r = c.command('SEARCH FROM "j\u00f6rg@b\u00fccher"'.encode())
    assert r.ok and r.untagged == [b"* SEARCH 1"], r
    r = c.command(b'SEARCH SUBJECT "\xfcber"')
    assert r.status == "BAD", r


# -- section 4: the UTF8 APPEND data item


def test_utf8_append_stored_byte_for_byte(moat_server):
    c = utf8_login(moat_server)
    r = send_literal8_append(c, "INBOX", UTF8_MSG)
    assert r.ok and r.code.startswith("APPENDUID"), r
    r = send_literal8_append(c, "INBOX", UTF8_MSG, sync=True)
    assert r.ok, r
    assert c.command("SELECT INBOX").ok
    r = c.command("FETCH 1:2 (FLAGS BODY.PEEK[])")
    f = r.fetches()
    assert f[1]["BODY[]"] == UTF8_MSG and f[2]["BODY[]"] == UTF8_MSG, r
    assert b"\\Seen" in r.untagged[0], r


def test_utf8_append_multiappend_mixed(moat_server):
    """MULTIAPPEND (RFC 3502) of a UTF8 item and a plain literal."""
    c = utf8_login(moat_server)
    tag = c.next_tag()
    c.send(f"{tag} APPEND INBOX UTF8 (~{{{len(UTF8_MSG)}+}}\r\n".encode() +
           UTF8_MSG + b") (\\Flagged) {%d+}\r\n" % len(ASCII_MSG) +
           ASCII_MSG + b"\r\n")
    r = c.read_tagged(tag)
    assert r.ok and r.code.startswith("APPENDUID"), r
    assert b" 1:2]" in r.text, r
    assert c.command("SELECT INBOX").ok
    f = c.command("FETCH 1:2 BODY.PEEK[]").fetches()
    assert f[1]["BODY[]"] == UTF8_MSG and f[2]["BODY[]"] == ASCII_MSG


def test_utf8_append_errors(moat_server):
    # without ENABLE: BAD, nothing stored (no "+" for a sync literal)
    c = moat_server.login()
    r = send_literal8_append(c, "INBOX", UTF8_MSG, sync=True)
    assert r.status == "BAD" and b"ENABLE" in r.text, r
    r = send_literal8_append(c, "INBOX", UTF8_MSG)
    assert r.status == "BAD", r
    assert c.command("NOOP").ok
    c = utf8_login(moat_server)
    tag = c.next_tag()
    # not a literal8
    c.send(f"{tag} APPEND INBOX UTF8 ({{{len(UTF8_MSG)}+}}\r\n".encode() +
           UTF8_MSG + b")\r\n")
    assert c.read_tagged(tag).status == "BAD"
    # no list, an empty list, something after the literal
    for tail in (b"UTF8 ~{3+}\r\nabc", b"UTF8 ()", b"UTF8",
                 b"UTF8 (~{3+}\r\nabc x)", b"UTF8 (~{3+}\r\nabc ~{3+}\r\ndef)"):
        r = c.command(b"APPEND INBOX " + tail)
        assert r.status == "BAD", (tail, r)
    # RFC 3502: an empty message cancels
    r = c.command(b"APPEND INBOX UTF8 (~{0+}\r\n)")
    assert r.status == "NO", r
    assert c.command("NOOP").ok
    r = c.command("STATUS INBOX (MESSAGES)")
    assert r.untagged == [b"* STATUS INBOX (MESSAGES 0)"], r


def test_utf8_append_to_utf8_name(moat_server):
    c = utf8_login(moat_server)
    assert c.command('CREATE "Gesch\u00e4ft"'.encode()).ok
    r = send_literal8_append(c, '"Gesch\u00e4ft"', UTF8_MSG)
    assert r.ok, r
    r = c.command('STATUS "Gesch\u00e4ft" (MESSAGES)'.encode())
    assert r.untagged == ['* STATUS "Gesch\u00e4ft" (MESSAGES 1)'.encode()], r


# -- sections 7 and 8: messages with UTF-8 headers


def test_utf8_headers_unchanged_for_both_modes(moat_server):
    """moat stores one copy and sends it as it is to every session: the
    headers of ENVELOPE and BODY[HEADER.FIELDS] hold the raw UTF-8 (as
    literals, which IMAP4rev1 allows for 8-bit text), no downgrade."""
    c = moat_server.login()
    assert c.append("INBOX", UTF8_MSG).ok
    for session in (moat_server.login(), utf8_login(moat_server)):
        assert session.command("EXAMINE INBOX").ok
        r = session.command("FETCH 1 (ENVELOPE BODY.PEEK[HEADER.FIELDS "
                            "(SUBJECT)])")
        assert r.ok, r
        line = r.untagged[0]
        assert "\u00dcberweisung f\u00fcr M\u00e4rz".encode() in line, line
        assert "j\u00f6rg".encode() in line, line
        # 8-bit text goes as a literal, never as an 8-bit quoted string
        subject = "\u00dcberweisung f\u00fcr M\u00e4rz".encode()
        assert b"(NIL {%d}\r\n%s (" % (len(subject), subject) in line, line
        f = r.fetches()[1]
        assert f["BODY[HEADER.FIELDS (SUBJECT)]"] == (
            "Subject: \u00dcberweisung f\u00fcr M\u00e4rz\r\n\r\n".encode())
