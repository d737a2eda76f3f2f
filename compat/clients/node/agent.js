// The Node side of the compat suite's agent protocol (compat/clients/agent.py): JSON lines on stdin, one
// answer per request on stdout, in order. A driver (kafkajs.js, ...) gives serve() its ops (the Client
// methods, by the protocol's op names) and openMember(); this file owns the loop, the member table and
// the error shapes, so a driver is only the translation into its client's API.
'use strict'

const readline = require('readline')

/** An error the client reported: Kafka's error name, the client's type name, its message. */
class ClientError extends Error {
  constructor (code, type, message) {
    super(`${code} (${type}): ${message}`)
    this.code = code
    this.type = type
    this.detail = message
  }
}

/** The client has no way to do this (the cell shows "unsupported", with this reason). */
class Unsupported extends Error {}

const hex = (b) => (b === null || b === undefined ? null : Buffer.from(b).toString('hex'))
const unhex = (s) => (s === null || s === undefined ? null : Buffer.from(s, 'hex'))

/** What a polling member keeps for the harness: records received, errors seen, partitions held. */
class Inbox {
  constructor () {
    this.records = []
    this.errors = []
    this.assigned = new Map() // "topic\0partition" -> [topic, partition]
  }

  assign (pairs, held) {
    for (const [t, p] of pairs) {
      if (held) this.assigned.set(`${t}\0${p}`, [t, p])
      else this.assigned.delete(`${t}\0${p}`)
    }
  }

  setAssignment (pairs) {
    this.assigned.clear()
    this.assign(pairs, true)
  }

  assignment () {
    return [...this.assigned.values()].sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1))
  }

  take () {
    const out = this.records
    this.records = []
    return out
  }

  takeErrors () {
    const out = this.errors
    this.errors = []
    return out
  }
}

/** Serve requests with ops (name -> async fn(req)) and openMember(req) -> member until "quit". */
async function serve ({ ops, openMember, close }) {
  const out = process.stdout
  console.log = console.info = console.warn = console.error // nothing but answers on the protocol's stream
  const members = new Map()
  const write = (obj) => new Promise((resolve) => out.write(JSON.stringify(obj) + '\n', resolve))
  const memberOps = {
    member_assignment: (m) => m.inbox.assignment(),
    member_take: (m) => m.inbox.take(),
    member_errors: (m) => m.inbox.takeErrors().map((e) => ({ code: e.code, type: e.type, message: e.detail })),
    member_commit: (m, r) => m.commit(r.offsets),
    member_position: (m, r) => m.position(r.topic, r.partition),
    member_seek: (m, r) => m.seek(r.topic, r.partition, r.offset),
    member_pause: (m, r) => m.pause(r.tps, true),
    member_resume: (m, r) => m.pause(r.tps, false),
    member_close: (m) => m.close()
  }
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false })
  for await (const line of rl) {
    const req = JSON.parse(line)
    const { id, op } = req
    if (op === 'quit') {
      for (const m of members.values()) {
        try { await m.close() } catch (e) { /* on the way out */ }
      }
      try { await close() } catch (e) { /* on the way out */ }
      await write({ id, ok: true, result: null })
      break
    }
    let answer
    try {
      let result
      if (ops[op]) {
        result = await ops[op](req)
      } else if (op === 'member_open') {
        const m = await openMember(req)
        const mid = `m${members.size + 1}`
        members.set(mid, m)
        result = mid
      } else if (memberOps[op]) {
        const m = members.get(req.m)
        if (!m) throw new Error(`no member ${req.m}`)
        result = await memberOps[op](m, req)
      } else {
        throw new Unsupported(`this driver has no ${op}`)
      }
      answer = { id, ok: true, result: result === undefined ? null : result }
    } catch (e) {
      if (e instanceof ClientError) {
        answer = { id, ok: false, error: { code: e.code, type: e.type, message: e.detail } }
      } else if (e instanceof Unsupported) {
        answer = { id, ok: false, unsupported: e.message }
      } else {
        answer = { id, ok: false, harness: String((e && e.stack) || e).slice(-4000) }
      }
    }
    await write(answer)
  }
  process.exit(0)
}

module.exports = { ClientError, Inbox, Unsupported, hex, serve, unhex }
