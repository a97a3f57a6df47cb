// RFC 8474 OBJECTID through imapflow (a real client library), for
// tests/protocol/test_imapflow.py.
//
//   node imapflow-objectid.js PORT USER PASS
//
// Creates the mailbox "Moved" (its mailboxId from the CREATE), opens
// INBOX, fetches uid, emailId and threadId of every message, searches by
// the first message's emailId and threadId, moves the first message to
// "Moved", opens that and fetches it there. Prints all of it as JSON.
'use strict';

const { ImapFlow } = require('imapflow');

async function fetchIds(client) {
    const out = [];
    for await (const m of client.fetch('1:*',
        { uid: true, emailId: true, threadId: true }))
        out.push({ uid: Number(m.uid), emailId: m.emailId,
                   threadId: m.threadId });
    return out;
}

async function main() {
    const [port, user, pass] = process.argv.slice(2);
    const client = new ImapFlow({
        host: '127.0.0.1', port: Number(port), secure: false,
        doSTARTTLS: false, auth: { user, pass }, logger: false,
        disableAutoIdle: true,
    });
    await client.connect();
    const created = await client.mailboxCreate('Moved');
    const inbox = await client.mailboxOpen('INBOX');
    const messages = await fetchIds(client);
    const byEmail = await client.search({ emailId: messages[0].emailId },
        { uid: true });
    const byThread = await client.search({ threadId: messages[0].threadId },
        { uid: true });
    await client.messageMove(String(messages[0].uid), 'Moved', { uid: true });
    const moved = await client.mailboxOpen('Moved');
    const movedMessages = await fetchIds(client);
    await client.logout();
    console.log(JSON.stringify({
        createdId: created.mailboxId, inboxId: inbox.mailboxId,
        movedId: moved.mailboxId, messages,
        byEmail: byEmail.map(Number), byThread: byThread.map(Number),
        movedMessages,
    }));
}

main().catch(err => { console.error(err); process.exit(1); });
