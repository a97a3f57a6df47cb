// UTF8=ACCEPT (RFC 6855) through imapflow, for
// tests/protocol/test_imapflow.py:
//
//   node imapflow-utf8.js PORT USER PASS
//
// imapflow enables UTF8=ACCEPT when it is offered; with it, it sends and
// reads mailbox names as UTF-8 and SEARCHes without CHARSET. The script
// creates a folder with a UTF-8 name, appends a message with raw UTF-8
// headers (RFC 6532) into it, and prints as JSON what it then sees: the
// enabled set, the folder paths LIST gave, the envelope and the SEARCH
// result.
'use strict';

const { ImapFlow } = require('imapflow');

const FOLDER = 'Entw\u00fcrfe/\u65e5\u672c';
const MESSAGE = Buffer.from(
    'From: J\u00f6rg <j\u00f6rg@b\u00fccher.example>\r\n' +
    'Subject: \u00dcberweisung f\u00fcr M\u00e4rz\r\n\r\nK\u00f6rper\r\n');

async function main() {
    const [port, user, pass] = process.argv.slice(2);
    const client = new ImapFlow({
        host: '127.0.0.1', port: Number(port), secure: false,
        doSTARTTLS: false, auth: { user, pass }, logger: false,
        disableAutoIdle: true,
    });
    await client.connect();
    const out = { enabled: [...client.enabled].sort() };
    await client.mailboxCreate(FOLDER);
    out.paths = (await client.list()).map(b => b.path).sort();
    await client.append(FOLDER, MESSAGE);
    await client.mailboxOpen(FOLDER);
    const msg = await client.fetchOne('1', { envelope: true, source: true });
    out.subject = msg.envelope.subject;
    out.from = msg.envelope.from.map(a => a.address);
    out.sourceEqual = Buffer.compare(msg.source, MESSAGE) === 0;
    out.search = await client.search({ subject: '\u00fcberweisung' });
    await client.logout();
    process.stdout.write(JSON.stringify(out));
}

main().catch(err => {
    process.stderr.write(`${err.stack || err}\n`);
    process.exit(1);
});
