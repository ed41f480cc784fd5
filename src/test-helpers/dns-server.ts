/**
 * A tiny real DNS server for tests (UDP on 127.0.0.1, a free port) answering TXT queries from a
 * map, so a real `dns.promises.Resolver` can be pointed at it with
 * `resolver.setServers([`127.0.0.1:${server.port}`])`.
 *
 * A name with TXT records answers them; a name set with `setTxt(name, [])` answers NOERROR with no
 * data (ENODATA); any other name answers NXDOMAIN (ENOTFOUND); a name set to fail answers
 * SERVFAIL (ESERVFAIL) or nothing at all (ETIMEOUT at the resolver).
 */
import { createSocket } from "node:dgram";
import type { AddressInfo } from "node:net";

const TYPE_TXT = 16;
const TYPE_ANY = 255;
const CLASS_IN = 1;
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;
/** Longest character-string in a TXT record (RFC 1035 §3.3). */
const MAX_CHARACTER_STRING = 255;

export type TestDnsServer = {
  port: number;
  /** `127.0.0.1:<port>`, for `Resolver.setServers`. */
  address: string;
  /** Sets the TXT records of `name`: one string per record (split into 255-byte character-strings as needed). */
  setTxt(name: string, records: string[]): void;
  /** Removes `name`: it answers NXDOMAIN again. */
  remove(name: string): void;
  /** Makes `name` answer SERVFAIL, or not answer at all (`'drop'`); `undefined` restores normal answers. */
  setFailure(name: string, failure: "servfail" | "drop" | undefined): void;
  /** How many queries `name` received. */
  queryCount(name: string): number;
  close(): Promise<void>;
};

/** Starts a test DNS server. */
export async function startDnsServer(): Promise<TestDnsServer> {
  const txt = new Map<string, string[]>();
  const failures = new Map<string, "servfail" | "drop">();
  const counts = new Map<string, number>();
  const socket = createSocket("udp4");

  socket.on("message", (query, remote) => {
    const question = parseQuestion(query);
    if (!question) return;
    const name = question.name.toLowerCase();
    counts.set(name, (counts.get(name) ?? 0) + 1);
    const failure = failures.get(name);
    if (failure === "drop") return;
    const records = txt.get(name);
    const rcode = failure === "servfail" ? RCODE_SERVFAIL : records === undefined ? RCODE_NXDOMAIN : 0;
    const answers = rcode === 0 && (question.type === TYPE_TXT || question.type === TYPE_ANY) ? (records ?? []) : [];
    socket.send(buildResponse(query, question.end, rcode, answers), remote.port, remote.address);
  });

  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address() as AddressInfo;
  const key = (name: string) => name.toLowerCase().replace(/\.$/, "");

  return {
    port,
    address: `127.0.0.1:${port}`,
    setTxt: (name, records) => void txt.set(key(name), records),
    remove: (name) => void txt.delete(key(name)),
    setFailure: (name, failure) => void (failure ? failures.set(key(name), failure) : failures.delete(key(name))),
    queryCount: (name) => counts.get(key(name)) ?? 0,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** The first question of a query: its name (dotted, no trailing dot), type, and where it ends. */
function parseQuestion(message: Buffer): { name: string; type: number; end: number } | undefined {
  if (message.length < 12 || message.readUInt16BE(4) < 1) return undefined;
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    if (offset >= message.length) return undefined;
    const length = message[offset];
    if (length === 0) break;
    if (length > 63) return undefined; // queries carry no compression pointers
    labels.push(message.toString("latin1", offset + 1, offset + 1 + length));
    offset += 1 + length;
  }
  offset += 1;
  if (offset + 4 > message.length) return undefined;
  return { name: labels.join("."), type: message.readUInt16BE(offset), end: offset + 4 };
}

/** A response echoing the query's id and question, with `records` as TXT answers. */
function buildResponse(query: Buffer, questionEnd: number, rcode: number, records: string[]): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0); // id
  const recursionDesired = query[2] & 0x01;
  header[2] = 0x80 | 0x04 | recursionDesired; // QR, AA, RD as asked
  header[3] = 0x80 | rcode; // RA, RCODE
  header.writeUInt16BE(1, 4); // QDCOUNT
  header.writeUInt16BE(records.length, 6); // ANCOUNT
  const answers = records.map((record) => {
    const rdata = Buffer.concat(characterStrings(record));
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0); // name: pointer to the question's name
    fixed.writeUInt16BE(TYPE_TXT, 2);
    fixed.writeUInt16BE(CLASS_IN, 4);
    fixed.writeUInt32BE(60, 6); // TTL
    fixed.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([fixed, rdata]);
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...answers]);
}

/** `text` as length-prefixed character-strings of at most 255 bytes. */
function characterStrings(text: string): Buffer[] {
  const bytes = Buffer.from(text, "utf8");
  const parts: Buffer[] = [];
  for (let i = 0; i === 0 || i < bytes.length; i += MAX_CHARACTER_STRING) {
    const chunk = bytes.subarray(i, i + MAX_CHARACTER_STRING);
    parts.push(Buffer.concat([Buffer.from([chunk.length]), chunk]));
  }
  return parts;
}
