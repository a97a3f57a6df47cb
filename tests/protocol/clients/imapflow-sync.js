// One synchronisation of a cached INBOX by imapflow (a real client
// library), for tests/protocol/test_imapflow.py.
//
//   node imapflow-sync.js MODE PORT USER PASS STATE.json [COMPRESS]
//
// COMPRESS "compress" (the default): imapflow negotiates COMPRESS=DEFLATE
// as it does when the server offers it, and the run fails if the session
// was not compressed; "plain": compression disabled.
//
// MODE qresync: ENABLE QRESYNC, SELECT (QRESYNC (uidvalidity modseq)),
// applying the VANISHED (EARLIER) and FETCH it answers; MODE condstore:
// SELECT, UID FETCH 1:* (FLAGS) (CHANGEDSINCE modseq) and UID SEARCH ALL
// for the expunges (RFC 7162 3.2.6 example 1). Either way the new
// messages are fetched after, and STATE.json ({uidValidity,
// highestModseq, flags: {uid: [flags]}}) is replaced by the new state.
'use strict';

const fs = require('fs');
const { ImapFlow } = require('imapflow');

async function main() {
    const [mode, port, user, pass, statePath, comp = 'compress'] =
        process.argv.slice(2);
    let state = fs.existsSync(statePath) ?
        JSON.parse(fs.readFileSync(statePath, 'utf8')) : null;
    const client = new ImapFlow({
        host: '127.0.0.1', port: Number(port), secure: false,
        doSTARTTLS: false, auth: { user, pass }, logger: false,
        qresync: mode === 'qresync', disableAutoIdle: true,
        disableCompression: comp !== 'compress',
    });
    const flags = new Map(state ? Object.entries(state.flags)
        .map(([uid, f]) => [Number(uid), new Set(f)]) : []);
    let vanished = 0, changed = 0;
    client.on('expunge', ev => {
        if (ev.uid) { flags.delete(Number(ev.uid)); vanished++; }
    });
    client.on('flags', ev => {
        if (ev.uid) { flags.set(Number(ev.uid), new Set(ev.flags)); changed++; }
    });
    await client.connect();
    if (mode === 'qresync' && !client.enabled.has('QRESYNC'))
        throw new Error('QRESYNC was not enabled');
    // imapflow keeps its deflate stream here once COMPRESS succeeded
    if ((comp === 'compress') !== !!client._deflate)
        throw new Error(`compression is ${client._deflate ? 'on' : 'off'}`);
    const opts = state && mode === 'qresync' ?
        { uidValidity: BigInt(state.uidValidity),
          changedSince: BigInt(state.highestModseq) } : {};
    const box = await client.mailboxOpen('INBOX', opts);
    if (state && String(box.uidValidity) !== String(state.uidValidity))
        throw new Error('UIDVALIDITY changed');
    if (mode === 'qresync' && state && !box.qresync)
        throw new Error('the server did not answer QRESYNC');
    if (state && mode === 'condstore') {
        for await (const m of client.fetch('1:*', { uid: true, flags: true },
            { uid: true, changedSince: BigInt(state.highestModseq) })) {
            flags.set(Number(m.uid), new Set(m.flags));
            changed++;
        }
        const present = new Set((await client.search({ all: true },
            { uid: true })).map(Number));
        for (const uid of [...flags.keys()]) {
            if (!present.has(uid)) { flags.delete(uid); vanished++; }
        }
    }
    // the new messages (all of them on the first run)
    const top = Math.max(0, ...flags.keys());
    if (box.exists > 0) {
        for await (const m of client.fetch(`${top + 1}:*`,
            { uid: true, flags: true }, { uid: true })) {
            if (Number(m.uid) > top)
                flags.set(Number(m.uid), new Set(m.flags));
        }
    }
    const out = {
        uidValidity: String(box.uidValidity),
        highestModseq: String(box.highestModseq),
        flags: Object.fromEntries([...flags].map(([u, f]) =>
            [u, [...f].filter(x => x !== '\\Recent').sort()])),
        vanished, changed, compressed: !!client._deflate,
    };
    await client.logout();
    fs.writeFileSync(statePath, JSON.stringify(out));
}

main().catch(err => { console.error(err); process.exit(1); });
