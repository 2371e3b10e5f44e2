import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { dmarcPassed, parseAggregateReport, reportConcerns, reportTotals } from '../../src/modules/dmarc/dmarc-report.fns.ts';
import { DmarcReportError, unpackReport } from '../../src/modules/dmarc/dmarc-unpack.fns.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/dmarc/${name}`, import.meta.url));

function reasonOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof DmarcReportError) return error.reason;
    throw error;
  }
  return 'no error';
}

/** A report of our own making, for the cases the public samples do not show (passes, a DOCTYPE). */
function reportXml(records: string, head = ''): string {
  return `${head}<?xml version="1.0"?><feedback><report_metadata><org_name>google.com</org_name><email>noreply-dmarc-support@google.com</email>
<report_id>1234</report_id><date_range><begin>1700000000</begin><end>1700086399</end></date_range></report_metadata>
<policy_published><domain>mail.example.com</domain><p>reject</p><pct>100</pct></policy_published>${records}</feedback>`;
}

describe('DMARC aggregate report parsing', () => {
  it('reads a plain XML report from Outlook.com', () => {
    const [xml] = unpackReport(fixture('outlook.xml'));
    const report = parseAggregateReport(xml!);
    expect(report).toMatchObject({
      orgName: 'Outlook.com',
      email: 'dmarcreport@microsoft.com',
      reportId: 'cfeafefe4129445e8c81018bd9177197',
      dateBegin: new Date(1711756800 * 1000),
      dateEnd: new Date(1711843200 * 1000),
      policy: { domain: 'example.com', adkim: 'r', aspf: 'r', p: 'none', sp: 'none', pct: 100 },
    });
    expect(report.records).toEqual([
      {
        sourceIp: '100.24.188.149',
        count: 1,
        disposition: 'none',
        dkimAligned: false,
        spfAligned: false,
        headerFrom: 'example.com',
        envelopeFrom: 'example.com',
        dkim: [],
        spf: [{ domain: 'example.com', selector: 'mfrom', result: 'fail' }],
      },
    ]);
  });

  it('reads a gzipped report (FastMail) and a zipped one', () => {
    const gz = unpackReport(fixture('fastmail-gzip.xml.gz')).map(parseAggregateReport);
    expect(gz.map((r) => [r.orgName, r.reportId, r.records[0]?.sourceIp, r.records[0]?.spf[0]?.result])).toEqual([
      ['FastMail Pty Ltd', '102675056', '104.195.80.20', 'softfail'],
    ]);
    const zip = unpackReport(fixture('infonacot-zip.xml.zip')).map(parseAggregateReport);
    expect(zip.map((r) => [r.orgName, r.reportId, r.policy.domain, r.records.length])).toEqual([
      ['XYZ Corporation', '2940', 'example.com', 1],
    ]);
  });

  it('reads every record of a report with several', () => {
    const report = parseAggregateReport(fixture('usssa-two-records.xml').toString('utf8'));
    expect(report.records.map((r) => [r.sourceIp, r.count, r.envelopeFrom])).toEqual([
      ['12.20.127.40', 1, null],
      ['199.230.200.36', 1, null],
    ]);
  });

  it('reads aligned passes and counts DMARC as passed when either aligns', () => {
    const report = parseAggregateReport(
      reportXml(`<record><row><source_ip>2001:db8::1</source_ip><count>42</count><policy_evaluated><disposition>none</disposition>
<dkim>pass</dkim><spf>Fail</spf></policy_evaluated></row><identifiers><header_from>Mail.Example.com</header_from></identifiers>
<auth_results><dkim><domain>mail.example.com</domain><selector>herald</selector><result>pass</result></dkim>
<spf><domain>bounces.example.com</domain><result>pass</result></spf></auth_results></record>`),
    );
    const [record] = report.records;
    expect(record).toMatchObject({
      sourceIp: '2001:db8::1',
      count: 42,
      dkimAligned: true,
      spfAligned: false,
      headerFrom: 'mail.example.com',
    });
    expect(record!.dkim).toEqual([{ domain: 'mail.example.com', selector: 'herald', result: 'pass' }]);
    expect(dmarcPassed(record!)).toBe(true);
    expect(dmarcPassed({ dkimAligned: false, spfAligned: false })).toBe(false);
  });

  it('refuses malformed XML (a real broken report from veeam.com)', () => {
    const [xml] = unpackReport(fixture('veeam-invalid-xml.xml'));
    expect(reasonOf(() => parseAggregateReport(xml!))).toBe('malformed');
  });

  it.each([
    ['no feedback element', '<?xml version="1.0"?><other/>'],
    ['a DOCTYPE', reportXml('', '<!DOCTYPE feedback [<!ENTITY a "aaaa">]>')],
    ['a record without a valid address', reportXml('<record><row><source_ip>not-an-ip</source_ip><count>1</count></row></record>')],
    ['a negative count', reportXml('<record><row><source_ip>192.0.2.1</source_ip><count>-1</count></row></record>')],
    ['no report id', reportXml('').replace('<report_id>1234</report_id>', '')],
  ])('refuses a report with %s', (_name, xml) => {
    expect(reasonOf(() => parseAggregateReport(xml))).toBe('malformed');
  });

  it('refuses a gzip bomb past the limit without inflating it all', () => {
    const bomb = gzipSync(Buffer.alloc(30 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(100 * 1024);
    expect(reasonOf(() => unpackReport(bomb))).toBe('too_large');
    expect(reasonOf(() => unpackReport(gzipSync(Buffer.alloc(2048, 0x20)), 1024))).toBe('too_large');
  });

  it('refuses a zip bomb past the limit', () => {
    const bomb = zipSync({ 'report.xml': new Uint8Array(30 * 1024 * 1024).fill(0x20) }, { level: 9 });
    expect(bomb.length).toBeLessThan(100 * 1024);
    expect(reasonOf(() => unpackReport(bomb))).toBe('too_large');
  });

  it('refuses a corrupt archive', () => {
    const gz = fixture('fastmail-gzip.xml.gz');
    expect(reasonOf(() => unpackReport(gz.subarray(0, gz.length - 40)))).toBe('bad_archive');
    const zip = Buffer.from(fixture('infonacot-zip.xml.zip'));
    zip.fill(0xff, 40, 200);
    expect(reasonOf(() => unpackReport(zip))).toBe('bad_archive');
  });

  it('matches a report to its domain and subdomains only', () => {
    expect(reportConcerns('Example.com', 'example.com')).toBe(true);
    expect(reportConcerns('example.com', 'mail.example.com')).toBe(true);
    expect(reportConcerns('example.com', 'badexample.com')).toBe(false);
  });
});

describe('reportTotals', () => {
  it('sums a report’s messages: DMARC pass and fail, each mechanism aligned, the dispositions', () => {
    const record = { sourceIp: '192.0.2.1', headerFrom: 'example.com', envelopeFrom: null, dkim: [], spf: [] };
    const totals = reportTotals({
      records: [
        { ...record, count: 5, disposition: 'none', dkimAligned: true, spfAligned: true },
        { ...record, count: 2, disposition: 'none', dkimAligned: false, spfAligned: true },
        { ...record, count: 3, disposition: 'quarantine', dkimAligned: false, spfAligned: false },
        { ...record, count: 1, disposition: 'reject', dkimAligned: false, spfAligned: false },
      ],
    });
    expect(totals).toEqual({ messages: 11, dmarcPass: 7, dmarcFail: 4, dkimAligned: 5, spfAligned: 7, quarantined: 3, rejected: 1 });
  });
});
