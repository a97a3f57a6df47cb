#!/usr/bin/env python3
"""Compare moat's MIME output (mime/mime-dump, or moat's own IMAP server)
with a reference IMAP server (a private Dovecot started by
compare-dovecot-mime.sh, or any server given with --ref-host).

For each .eml file: APPEND it byte for byte (no LF->CRLF rewriting, so the
server stores what it is given), FETCH ENVELOPE BODY BODYSTRUCTURE
RFC822.SIZE, and compare item by item with the candidate's output for the
same file. The candidate is `mime-dump -l FILE` unless --moat-host is given,
in which case the same APPEND+FETCH runs against moat's IMAP server.
"""
import argparse
import imaplib
import json
import os
import re
import subprocess
import sys

ITEMS = ("ENVELOPE", "BODY", "BODYSTRUCTURE", "RFC822.SIZE")


def skip_string(data, i):
    """Return the index after the quoted string or literal starting at i."""
    if data[i:i + 1] == b'"':
        i += 1
        while i < len(data):
            c = data[i:i + 1]
            if c == b'\\':
                i += 2
                continue
            if c == b'"':
                return i + 1
            i += 1
        return i
    m = re.match(rb'\{(\d+)\+?\}\r\n', data[i:])
    if m:
        return i + m.end() + int(m.group(1))
    return i + 1


def skip_value(data, i):
    """Index after the IMAP value (atom, string, literal, list) at i."""
    c = data[i:i + 1]
    if c == b'(':
        depth = 0
        while i < len(data):
            c = data[i:i + 1]
            if c in (b'"', b'{') and (c == b'"' or
                                      re.match(rb'\{\d+\+?\}\r\n', data[i:])):
                i = skip_string(data, i)
                continue
            if c == b'(':
                depth += 1
            elif c == b')':
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return i
    if c in (b'"', b'{'):
        return skip_string(data, i)
    while i < len(data) and data[i:i + 1] not in (b' ', b')'):
        i += 1
    return i


def parse_fetch(raw):
    """Split '* n FETCH (NAME value NAME value ...)' into a dict."""
    start = raw.find(b'(')
    out = {}
    i = start + 1
    while i < len(raw):
        while raw[i:i + 1] == b' ':
            i += 1
        if raw[i:i + 1] in (b')', b''):
            break
        j = i
        while raw[j:j + 1] not in (b' ', b''):
            j += 1
        name = raw[i:j].decode('ascii', 'replace').upper()
        k = skip_value(raw, j + 1)
        out[name] = raw[j + 1:k]
        i = k
    return out


def join_response(data):
    """imaplib splits literals out as tuples: glue the raw text back."""
    raw = b''
    for item in data:
        if isinstance(item, tuple):
            raw += item[0] + b"\r\n" + item[1]
        elif item is not None:
            raw += item
    return raw


class Server:
    def __init__(self, host, port, user, password, mailbox):
        self.imap = imaplib.IMAP4(host, port)
        self.imap.login(user, password)
        self.mailbox = mailbox
        if mailbox.upper() != 'INBOX':
            self.imap.create(mailbox)
        typ, _ = self.imap.select(mailbox)
        if typ != 'OK':
            raise RuntimeError('SELECT %s failed' % mailbox)

    def fetch(self, msg):
        """APPEND msg unchanged and FETCH the items; dict or error string."""
        # imaplib.append() would rewrite bare LF/CR to CRLF: bypass it.
        self.imap.literal = msg
        try:
            typ, dat = self.imap._simple_command('APPEND', self.mailbox)
        except imaplib.IMAP4.error as e:
            return 'APPEND error: %s' % e
        if typ != 'OK':
            return 'APPEND %s: %r' % (typ, dat)
        m = re.search(rb'APPENDUID \d+ (\d+)', dat[-1] or b'')
        if not m:
            return 'no APPENDUID in %r' % dat
        uid = m.group(1).decode()
        typ, dat = self.imap.uid('FETCH', uid, '(%s)' % ' '.join(ITEMS))
        if typ != 'OK' or not dat or dat[0] is None:
            return 'FETCH %s: %r' % (typ, dat)
        # Expunge so the mailbox stays small and sequence numbers do not
        # matter.
        self.imap.uid('STORE', uid, '+FLAGS.SILENT', r'(\Deleted)')
        self.imap.expunge()
        return parse_fetch(join_response(dat))


def mime_dump(tool, path):
    """Run mime-dump -l: records 'NAME LEN\\n<bytes>\\n'."""
    p = subprocess.run([tool, '-l', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        return 'mime-dump exit %d: %s' % (p.returncode,
                                          p.stderr.decode(errors='replace'))
    out, data, i = {}, p.stdout, 0
    while i < len(data):
        nl = data.index(b'\n', i)
        name, length = data[i:nl].decode().split(' ')
        n = int(length)
        out[name] = data[nl + 1:nl + 1 + n]
        i = nl + 2 + n
    return out


def load_files(corpus, limit, match):
    files = []
    for root, _, names in os.walk(corpus):
        for n in names:
            if n.endswith('.eml') and (match is None or match in
                                       os.path.join(root, n)):
                files.append(os.path.join(root, n))
    files.sort()
    return files[:limit] if limit else files


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--corpus', default='/work/shared/corpus/mime')
    ap.add_argument('--ref-host', default='127.0.0.1')
    ap.add_argument('--ref-port', type=int, default=143)
    ap.add_argument('--ref-user', default='test')
    ap.add_argument('--ref-pass', default='test')
    ap.add_argument('--moat-host', help='compare with moat IMAP, not mime-dump')
    ap.add_argument('--moat-port', type=int, default=143)
    ap.add_argument('--moat-user', default='test')
    ap.add_argument('--moat-pass', default='test')
    ap.add_argument('--mime-dump', default='build/test/mime/mime-dump')
    ap.add_argument('--limit', type=int, default=0)
    ap.add_argument('--match', help='only files whose path contains this')
    ap.add_argument('--show', type=int, default=10, help='diffs to print')
    ap.add_argument('--crlf', action='store_true',
                    help='convert every file to CRLF before both sides')
    ap.add_argument('--probe', action='store_true',
                    help='print the reference output for each file')
    ap.add_argument('--list-differ', help='write differing files here')
    ap.add_argument('--save-ref', help='store the reference answers (JSON)')
    ap.add_argument('--load-ref', help='use stored reference answers')
    args = ap.parse_args()

    cache = {}
    ref = None
    if args.load_ref:
        with open(args.load_ref) as f:
            cache = {p: (v if isinstance(v, str) else
                         {k: x.encode('latin-1') for k, x in v.items()})
                     for p, v in json.load(f).items()}
    else:
        ref = Server(args.ref_host, args.ref_port, args.ref_user,
                     args.ref_pass, 'INBOX')
    moat = None
    if args.moat_host:
        moat = Server(args.moat_host, args.moat_port, args.moat_user,
                      args.moat_pass, 'INBOX')
    files = load_files(args.corpus, args.limit, args.match)
    equal = {k: 0 for k in ITEMS}
    differ = {k: 0 for k in ITEMS}
    all_equal, shown, errors = 0, 0, 0
    differing = []
    tmp = None
    for path in files:
        with open(path, 'rb') as f:
            msg = f.read()
        if args.crlf:
            msg = re.sub(rb'\r?\n', b'\r\n', msg)
            tmp = tmp or '/tmp/compare-mime-%d.eml' % os.getpid()
            with open(tmp, 'wb') as f:
                f.write(msg)
        key = path + (' crlf' if args.crlf else '')
        r = cache[key] if args.load_ref else ref.fetch(msg)
        if args.save_ref:
            cache[key] = r
        if args.probe:
            print('==', path)
            for k in ITEMS:
                print(k, r[k].decode('utf-8', 'replace')
                      if isinstance(r, dict) else r)
            continue
        if moat:
            c = moat.fetch(msg)
        else:
            c = mime_dump(args.mime_dump, tmp if args.crlf else path)
        if not isinstance(r, dict) or not isinstance(c, dict):
            errors += 1
            print('ERROR', path, r if not isinstance(r, dict) else c)
            continue
        ok = True
        for k in ITEMS:
            if r.get(k) == c.get(k):
                equal[k] += 1
                continue
            differ[k] += 1
            ok = False
            if shown < args.show:
                shown += 1
                a, b = r.get(k) or b'', c.get(k) or b''
                i = 0
                while i < min(len(a), len(b)) and a[i] == b[i]:
                    i += 1
                lo = max(0, i - 100)
                print('DIFF %s %s (at byte %d)' % (k, path, i))
                print('  ref:  %r' % a[lo:i + 100])
                print('  moat: %r' % b[lo:i + 100])
        if ok:
            all_equal += 1
        else:
            differing.append(path)
    if tmp and os.path.exists(tmp):
        os.unlink(tmp)
    if args.save_ref:
        with open(args.save_ref, 'w') as f:
            json.dump({p: (v if isinstance(v, str) else
                           {k: x.decode('latin-1') for k, x in v.items()})
                       for p, v in cache.items()}, f)
    if args.probe:
        return 0
    print('files: %d, all items equal: %d, differ: %d, errors: %d' %
          (len(files), all_equal, len(differing), errors))
    for k in ITEMS:
        print('  %-14s equal %5d  differ %5d' % (k, equal[k], differ[k]))
    if args.list_differ:
        with open(args.list_differ, 'w') as f:
            f.write('\n'.join(differing) + '\n')
    return 0 if not differing and not errors else 1


if __name__ == '__main__':
    sys.exit(main())
