#!/usr/bin/env python3
"""Write the first COUNT messages of an mboxrd file (.xz is streamed, never
unpacked to disk) as Maildir files into each DIR/cur, or as a small mbox.

  mkmaildir.py SOURCE COUNT DIR...        Maildir files (the same names in
                                          every DIR, so servers get equal input)
  mkmaildir.py --mbox OUT SOURCE COUNT    the first COUNT messages as mboxrd
  mkmaildir.py --flip-seen DIR N          another client's flag change: flip
                                          \\Seen (rename) on every Nth file of
                                          DIR/cur in directory order; prints
                                          the number renamed

Used by bench/compare.sh for the big-mailbox steps (a Maildir that no server
has indexed yet, as in the courier comparison) and for the APPEND source.
"""

import lzma
import os
import sys

# Two of three messages are \\Seen, like a real archive that is mostly read.
SEEN_EVERY = 3


def messages(path, count):
    """Yields (from_line, body bytes with >From unescaped), at most count."""
    opener = lzma.open if path.endswith(".xz") else open
    n = 0
    cur = None
    from_line = b""
    with opener(path, "rb") as f:
        for line in f:
            if line.startswith(b"From "):
                if cur is not None:
                    yield from_line, b"".join(cur)
                    n += 1
                    if n >= count:
                        return
                cur = []
                from_line = line
                continue
            if cur is None:
                continue
            if line.startswith(b">") and \
                    line.lstrip(b">").startswith(b"From "):
                line = line[1:]
            cur.append(line)
        if cur is not None and n < count:
            yield from_line, b"".join(cur)


def write_maildirs(source, count, dirs):
    for d in dirs:
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
    base = 1500000000
    written = 0
    for i, (_, body) in enumerate(messages(source, count)):
        flags = "S" if i % SEEN_EVERY else ""
        name = f"{base + i}.M{i}P1.bench,S={len(body)}:2,{flags}"
        for d in dirs:
            path = os.path.join(d, "cur", name)
            with open(path, "wb") as out:
                out.write(body)
            os.utime(path, (base + i, base + i))
        written += 1
    return written


def write_mbox(out_path, source, count):
    written = 0
    with open(out_path, "wb") as out:
        for from_line, body in messages(source, count):
            out.write(from_line)
            for line in body.splitlines(keepends=True):
                if line.lstrip(b">").startswith(b"From "):
                    line = b">" + line
                out.write(line)
            if not body.endswith(b"\n"):
                out.write(b"\n")
            out.write(b"\n")
            written += 1
    return written


def flip_seen(maildir, every):
    """Renames one file in every of cur/ (":2," <-> ":2,S"), as mutt does
    for a flag change, in directory order like bench-workload.c."""
    cur = os.path.join(maildir, "cur")
    renamed = 0
    with os.scandir(cur) as it:
        names = [e.name for e in it if not e.name.startswith(".")]
    for i, name in enumerate(names):
        if i % every:
            continue
        if name.endswith(":2,"):
            new = name + "S"
        elif name.endswith(":2,S"):
            new = name[:-1]
        else:
            continue
        os.rename(os.path.join(cur, name), os.path.join(cur, new))
        renamed += 1
    return renamed


def main(argv):
    if len(argv) >= 3 and argv[0] == "--flip-seen":
        n = flip_seen(argv[1], int(argv[2]))
    elif len(argv) >= 4 and argv[0] == "--mbox":
        n = write_mbox(argv[1], argv[2], int(argv[3]))
    elif len(argv) >= 3:
        n = write_maildirs(argv[0], int(argv[1]), argv[2:])
    else:
        sys.stderr.write(__doc__)
        return 2
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
