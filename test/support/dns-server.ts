import { createSocket, type RemoteInfo } from 'node:dgram';
import dnsPacket, { type Answer } from 'dns-packet';

export interface ZoneRecords {
  A?: string[];
  AAAA?: string[];
  MX?: { exchange: string; priority: number }[];
  TXT?: string[];
  CNAME?: string;
}

/**
 * A small authoritative DNS server on 127.0.0.1 (UDP) speaking the real protocol, standing in
 * for the internet's DNS: tests set records per name, and unknown names answer NXDOMAIN.
 */
export async function startDnsServer(initial: Record<string, ZoneRecords> = {}) {
  const zone = new Map<string, ZoneRecords>(Object.entries(initial).map(([name, records]) => [name.toLowerCase(), records]));
  let silent = false;
  /** Questions received, by `<type> <name>`. */
  const asked = new Map<string, number>();
  const socket = createSocket('udp4');

  socket.on('message', (message: Buffer, remote: RemoteInfo) => {
    if (silent) return;
    let query;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    asked.set(`${question.type} ${name}`, (asked.get(`${question.type} ${name}`) ?? 0) + 1);
    const records = zone.get(name) ?? wildcard(name);
    const answers: Answer[] = [];
    if (records) {
      const ttl = 60;
      if (question.type === 'A') for (const data of records.A ?? []) answers.push({ type: 'A', name: question.name, ttl, data });
      if (question.type === 'AAAA') for (const data of records.AAAA ?? []) answers.push({ type: 'AAAA', name: question.name, ttl, data });
      if (question.type === 'MX') {
        for (const mx of records.MX ?? [])
          answers.push({ type: 'MX', name: question.name, ttl, data: { preference: mx.priority, exchange: mx.exchange } });
      }
      // A TXT record is a list of character strings of at most 255 bytes (long values are split, as providers do).
      if (question.type === 'TXT') {
        for (const text of records.TXT ?? [])
          answers.push({ type: 'TXT', name: question.name, ttl, data: text.match(/[\s\S]{1,255}/g) ?? [''] });
      }
      if (question.type === 'CNAME' && records.CNAME) answers.push({ type: 'CNAME', name: question.name, ttl, data: records.CNAME });
      // As a recursive resolver does: an alias answers other types with the CNAME and its target's records.
      const target = records.CNAME ? zone.get(records.CNAME.toLowerCase()) : undefined;
      if (question.type === 'TXT' && records.CNAME && target) {
        answers.push({ type: 'CNAME', name: question.name, ttl, data: records.CNAME });
        for (const text of target.TXT ?? [])
          answers.push({ type: 'TXT', name: records.CNAME, ttl, data: text.match(/[\s\S]{1,255}/g) ?? [''] });
      }
    }
    const response = dnsPacket.encode({
      id: query.id,
      type: 'response',
      // rcode lives in the low four bits: 3 = NXDOMAIN.
      flags: dnsPacket.AUTHORITATIVE_ANSWER | (records ? 0 : 3),
      questions: query.questions,
      answers,
    });
    socket.send(response, remote.port, remote.address);
  });

  /** `*.example.com` answers for any name below example.com without its own records. */
  function wildcard(name: string): ZoneRecords | undefined {
    const labels = name.split('.');
    for (let i = 1; i < labels.length; i += 1) {
      const found = zone.get(`*.${labels.slice(i).join('.')}`);
      if (found) return found;
    }
    return undefined;
  }

  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  return {
    /** For DNS_SERVERS. */
    address: `127.0.0.1:${port}`,
    set(name: string, records: ZoneRecords) {
      zone.set(name.toLowerCase(), records);
    },
    remove(name: string) {
      zone.delete(name.toLowerCase());
    },
    /** How many times the server was asked for this type and name. */
    queries(type: string, name: string): number {
      return asked.get(`${type} ${name.toLowerCase()}`) ?? 0;
    },
    /** Stop answering (simulates an unreachable resolver) or resume. */
    setSilent(value: boolean) {
      silent = value;
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

export type TestDnsServer = Awaited<ReturnType<typeof startDnsServer>>;
