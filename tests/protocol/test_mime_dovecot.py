"""Differential MIME test against Dovecot (tests/compare/mime_diff.py).

Every message of the MIME corpus and the generator's messages for two
fixed seeds (MOAT_MIME_SEED=N replaces the second, MOAT_MIME_SEED=random
picks one and prints it: exploring, not for CI, which must not pass or
fail by chance) are
APPENDed to moat and to a private Dovecot (2.3, on a random 127.0.0.1 port,
never the system service), and every section of every part at every depth
is compared: BODY[n], BODY[n.MIME], BODY[n.HEADER], BODY[n.TEXT],
BINARY[n], BINARY.SIZE[n], BODYSTRUCTURE, ENVELOPE, RFC822.SIZE,
BODY[HEADER], BODY[TEXT]. A difference doc/mime-differences.md does not
list (tests/compare/mime_known.py recognises those) fails the test.

Skipped, saying so, where Dovecot is not installed (dev.sh installs
dovecot-imapd)."""

import io
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from moatserver import USERS, wait_for

COMPARE = pathlib.Path(__file__).resolve().parent.parent / "compare"
sys.path.insert(0, str(COMPARE))
import mime_diff  # noqa: E402

CORPUS = pathlib.Path(os.environ.get("MOAT_MIME_CORPUS",
                                     "/work/shared/corpus/mime"))
FIXED_SEED = 1
# The second seed of a normal run; random seeds have found what the fixed
# ones had not (doc/mime-differences.md, "Open"), so explore with
# MOAT_MIME_SEED=random and pin what they find as a test.
SECOND_SEED = 7
# Generated messages per seed: with the corpus about two minutes of a
# loaded 2-core machine (the sanitizer build serves moat's side).
FIXED_COUNT = 1000
RANDOM_COUNT = 500
DOVECOT_STOP_TIMEOUT = 10.0


@pytest.fixture
def dovecot():
    """Port of a private Dovecot (tests/compare/compare-dovecot-mime.sh)."""
    if shutil.which("dovecot") is None:
        pytest.skip("Dovecot is not installed (Debian package dovecot-imapd, "
                    "which ./dev.sh installs): the differential MIME test "
                    "needs a private instance to compare with")
    proc = subprocess.run([str(COMPARE / "compare-dovecot-mime.sh"),
                           "--serve"], capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        pytest.fail("starting a private Dovecot failed:\n" + proc.stdout +
                    proc.stderr)
    info = dict(kv.split("=", 1) for kv in proc.stdout.split())
    pid = int(info["pid"])
    try:
        yield int(info["port"])
    finally:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        # it is not our child (the script started it): wait for /proc
        wait_for(lambda: not os.path.exists(f"/proc/{pid}"),
                 DOVECOT_STOP_TIMEOUT)
        shutil.rmtree(info["dir"], ignore_errors=True)


def test_mime_against_dovecot(moat_server, dovecot):
    choice = os.environ.get("MOAT_MIME_SEED") or str(SECOND_SEED)
    seed = random.randrange(1 << 30) if choice == "random" else int(choice)
    print(f"mime differential test: seeds {FIXED_SEED} and {seed} "
          f"(MOAT_MIME_SEED={seed} repeats the second)")
    report = io.StringIO()
    runs = []
    if CORPUS.is_dir():
        runs.append(dict(corpus=str(CORPUS), seed=[], count=0))
    else:
        print(f"no corpus at {CORPUS}: generated messages only")
    runs.append(dict(corpus=None, seed=[FIXED_SEED], count=FIXED_COUNT))
    runs.append(dict(corpus=None, seed=[seed], count=RANDOM_COUNT))
    problems = []
    start = time.monotonic()
    for run in runs:
        args = SimpleNamespace(
            ref_host="127.0.0.1", ref_port=dovecot, ref_user="test",
            ref_pass="test", moat_host=moat_server.host,
            moat_port=moat_server.port, moat_user="testuser1",
            moat_pass=USERS["testuser1"], mailbox="mimediff", match=None,
            show=20, by_mutation=False, item=None, **run)
        stats = mime_diff.run(args, out=report)
        if stats.new or stats.errors:
            problems.append(run)
    print(report.getvalue())
    print(f"mime differential test took {time.monotonic() - start:.0f} s")
    assert not problems, (
        f"differences from Dovecot that doc/mime-differences.md does not "
        f"list (second seed {seed}):\n" + report.getvalue())
