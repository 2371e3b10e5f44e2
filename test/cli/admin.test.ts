import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardInvite, Template } from '../../db/entities/index.ts';
import { adminUsage, runAdmin, type AdminDeps } from '../../src/cli/admin.ts';
import { decryptSecret } from '../../src/crypto/secret-box.ts';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';
import { Domain } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { REPO_ROOT } from '../../src/dev/paths.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const run = promisify(execFile);
const id24 = '0123456789abcdef01234567';

/** The smallest definition that publishes (a trigger and one exit step). */
const EXIT_ONLY = { trigger: { type: 'contact.created' }, start: 'done', steps: [{ id: 'done', type: 'exit' }] };

/** A file holding `content` (JSON unless a string), for --file. */
function definitionFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'herald-definition-')), 'definition.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('herald admin', () => {
  let stack: TestStack;
  const deps = (): Promise<AdminDeps> => Promise.resolve({ orm: stack.orm, config: stack.config });
  /** In-process run; the ORM is shared with the test, so `close` is neutralised. */
  async function admin(...argv: string[]) {
    const result = await runAdmin(argv, async () => {
      const d = await deps();
      return { ...d, orm: Object.assign(Object.create(d.orm) as typeof d.orm, { close: async () => {} }) };
    });
    return {
      ...result,
      json: argv.includes('--json') && result.stdout ? (JSON.parse(result.stdout) as Record<string, unknown>) : undefined,
    };
  }

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(() => stack.close());

  it('creates a workspace, a key, a domain, a sender, an automation, and sets credits', async () => {
    const org = await admin('org', 'create', '--name', 'Acme Corp', '--credits', '500', '--overage', '--json');
    expect(org.exitCode, org.stderr).toBe(0);
    expect(org.stdout.trim().split('\n')).toHaveLength(1);
    expect(org.json).toMatchObject({ name: 'Acme Corp', slug: 'acme-corp', credits: 500, overage: true });
    const orgId = org.json!.id as string;

    const key = await admin(
      'key',
      'create',
      '--org',
      orgId,
      '--scopes',
      'me:read,contacts:read',
      '--mode',
      'live',
      '--rate-limit-per-minute',
      '120',
      '--burst',
      '20',
      '--json',
    );
    expect(key.exitCode, key.stderr).toBe(0);
    expect(key.json).toMatchObject({
      org_id: orgId,
      mode: 'live',
      scopes: ['me:read', 'contacts:read'],
      rate_limit_per_minute: 120,
      burst: 20,
    });
    expect(key.json!.key).toMatch(/^hrld_live_[0-9A-Za-z]{40}$/);
    expect(JSON.stringify(key.json)).not.toMatch(/hash/i);

    const listed = await admin('key', 'list', '--org', orgId, '--json');
    expect(JSON.stringify(listed.json)).not.toContain(key.json!.key as string);

    const domain = await admin(
      'domain',
      'add',
      '--org',
      orgId,
      '--domain',
      'Mail.Acme.example',
      '--verified',
      '--daily-cap',
      '1000',
      '--json',
    );
    expect(domain.exitCode, domain.stderr).toBe(0);
    expect(domain.json).toMatchObject({
      domain: 'mail.acme.example',
      status: 'verified',
      verified: true,
      is_default: true,
      daily_cap: 1000,
    });
    const stored = await stack.orm.em.fork().findOneOrFail(Domain, { id: domain.json!.id as string }, ALL_TENANTS);
    expect(stored.dkimPrivateKeyEncrypted).toMatch(/^enc:v2:/);
    expect(decryptSecret(stack.config.encryptionKey!, stored.dkimPrivateKeyEncrypted)).toMatch(/BEGIN PRIVATE KEY/);

    const sender = await admin(
      'sender',
      'add',
      '--domain',
      domain.json!.id as string,
      '--email',
      'hello@mail.acme.example',
      '--name',
      'Acme',
      '--json',
    );
    expect(sender.exitCode, sender.stderr).toBe(0);
    expect(sender.json).toMatchObject({ email: 'hello@mail.acme.example', is_default: true, org_id: orgId });

    const automation = await admin(
      'automation',
      'create',
      '--org',
      orgId,
      '--name',
      'Welcome',
      '--file',
      definitionFile(EXIT_ONLY),
      '--status',
      'active',
      '--json',
    );
    expect(automation.exitCode, automation.stderr).toBe(0);
    expect(automation.json).toMatchObject({ name: 'Welcome', trigger_type: 'contact.created', status: 'active', version: 1 });
    expect(automation.json!.definition_id).toEqual(expect.any(String));

    const credits = await admin('credits', 'set', '--org', orgId, '--amount', '42', '--overage', 'off', '--json');
    expect(credits.json).toMatchObject({ credits: 42, overage: false });
  });

  it('sets and clears the postal address of broadcast footers, within 500 characters', async () => {
    const org = await admin('org', 'create', '--name', 'Footer Co', '--json');
    const orgId = org.json!.id as string;
    const set = await admin('org', 'postal-address', '--org', orgId, '--address', 'Footer Co\\n1 Main Street, Springfield', '--json');
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.json).toMatchObject({ id: orgId, postal_address: 'Footer Co\n1 Main Street, Springfield' });
    expect((await admin('org', 'postal-address', '--org', orgId, '--address', 'x'.repeat(500), '--json')).exitCode).toBe(0);
    const tooLong = await admin('org', 'postal-address', '--org', orgId, '--address', 'x'.repeat(501));
    expect(tooLong.exitCode).not.toBe(0);
    const cleared = await admin('org', 'postal-address', '--org', orgId, '--clear', '--json');
    expect(cleared.json).toMatchObject({ postal_address: null });
    expect((await admin('org', 'postal-address', '--org', orgId)).exitCode).toBe(2);
  });

  it('shares a template with another workspace, idempotently', async () => {
    const owner = (await admin('org', 'create', '--name', 'Owner Co', '--json')).json!.id as string;
    const grantee = (await admin('org', 'create', '--name', 'Grantee Co', '--json')).json!.id as string;
    const em = stack.orm.em.fork();
    const template = em.create(Template, { orgId: owner, name: 'Receipt' });
    await em.flush();
    const first = await admin('template', 'share', '--template', template.id, '--org', grantee, '--json');
    expect(first.json).toMatchObject({ template_id: template.id, org_id: grantee, hidden: false });
    const again = await admin('template', 'share', '--template', template.id, '--org', grantee, '--json');
    expect(again.json!.id).toBe(first.json!.id);
    const self = await admin('template', 'share', '--template', template.id, '--org', owner, '--json');
    expect(self.exitCode).toBe(2);
  });

  describe('automation definitions', () => {
    const welcome = (tag: string) => ({
      trigger: { type: 'tag.added', tag },
      reentry: { mode: 'always' },
      start: 'tag',
      steps: [
        { id: 'tag', type: 'update_contact', add_tags: ['welcomed'], next: 'pause' },
        { id: 'pause', type: 'wait', duration: '1d', next: null },
      ],
    });

    it('creates with --file, publishes the next version with update, and exports what --file takes', async () => {
      const orgId = (await admin('org', 'create', '--name', 'Definitions Co', '--json')).json!.id as string;
      const created = await admin(
        'automation',
        'create',
        '--org',
        orgId,
        '--name',
        'Trial',
        '--file',
        definitionFile(welcome('trial')),
        '--json',
      );
      expect(created.exitCode, created.stderr).toBe(0);
      expect(created.json).toMatchObject({ org_id: orgId, status: 'draft', trigger_type: 'tag.added', version: 1 });
      const id = created.json!.id as string;

      const exported = await admin('automation', 'export', id);
      expect(exported.exitCode, exported.stderr).toBe(0);
      expect(JSON.parse(exported.stdout)).toEqual({ ...welcome('trial'), timezone: 'UTC' });

      const updated = await admin('automation', 'update', id, '--file', definitionFile(welcome('paid')));
      expect(updated.exitCode, updated.stderr).toBe(0);
      expect(updated.stdout).toBe(`published version 2 of automation ${id}\n`);
      const again = await admin('automation', 'export', id, '--json');
      expect(again.json).toEqual({ automation_id: id, version: 2, definition: { ...welcome('paid'), timezone: 'UTC' } });

      // What export printed publishes again as it is.
      const roundTrip = await admin('automation', 'update', id.toUpperCase(), '--file', definitionFile(exported.stdout), '--json');
      expect(roundTrip.json).toMatchObject({ id, version: 3, trigger_type: 'tag.added' });

      const bare = await admin('automation', 'create', '--org', orgId, '--name', 'Later');
      expect(bare.stdout).toMatch(/^created automation [0-9a-f]{24} without a definition\n$/);
    });

    it('exits 2 listing every problem of a definition, and publishes nothing', async () => {
      const orgId = (await admin('org', 'create', '--name', 'Broken Definitions', '--json')).json!.id as string;
      const broken = {
        trigger: { type: 'contact.created' },
        start: 'a',
        steps: [
          { id: 'a', type: 'send_email', template_id: '0123456789abcdef01234567', from: 'hi@unknown.example', next: 'b' },
          { id: 'b', type: 'wait', duration: '1d', next: null },
          { id: 'c', type: 'webhook', endpoint_id: '0123456789abcdef01234567', next: null },
        ],
      };
      const result = await admin('automation', 'create', '--org', orgId, '--name', 'Broken', '--file', definitionFile(broken), '--json');
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain('Invalid definition: steps.2: step "c" cannot be reached from the start.');
      const graphOnly = { ...broken, steps: [broken.steps[0], { ...broken.steps[1], next: 'ghost' }, { ...broken.steps[2], id: 'a' }] };
      const listed = await admin('automation', 'create', '--org', orgId, '--name', 'Broken', '--file', definitionFile(graphOnly));
      expect(listed.exitCode).toBe(2);
      expect(listed.stderr).toMatch(/definition\.steps\.2\.id: step id "a" is used twice/);
      expect(listed.stderr).toMatch(/definition\.steps\.1\.next: there is no step "ghost"/);
      const references = await admin(
        'automation',
        'create',
        '--org',
        orgId,
        '--name',
        'Broken',
        '--file',
        definitionFile({ ...broken, steps: broken.steps.slice(0, 2) }),
      );
      expect(references.exitCode).toBe(2);
      expect(references.stderr).toMatch(
        /definition\.steps\.0\.template_id: template 0123456789abcdef01234567 does not exist in this workspace/,
      );
      expect(references.stderr).toMatch(/definition\.steps\.0\.from: unknown\.example is not a sending domain of this workspace/);
      expect((await admin('automation', 'list', '--org', orgId, '--json')).json).toEqual({ data: [] });
    });

    it('exits 2 for a file that is missing or not JSON, and for --trigger; 1 for an unknown automation or one without a definition', async () => {
      const orgId = (await admin('org', 'create', '--name', 'Files Co', '--json')).json!.id as string;
      const missing = await admin('automation', 'create', '--org', orgId, '--name', 'X', '--file', '/nonexistent/def.json');
      expect(missing.exitCode).toBe(2);
      expect(missing.stderr).toMatch(/--file \/nonexistent\/def\.json cannot be read: ENOENT/);
      const notJson = await admin('automation', 'create', '--org', orgId, '--name', 'X', '--file', definitionFile('{"trigger": '));
      expect(notJson.exitCode).toBe(2);
      expect(notJson.stderr).toMatch(/is not JSON/);
      const trigger = await admin('automation', 'create', '--org', orgId, '--name', 'X', '--trigger', 'contact.created');
      expect(trigger.exitCode).toBe(2);
      expect(trigger.stderr).toMatch(/--trigger is gone: the trigger is part of the definition/);
      expect((await admin('automation', 'update', id24, '--json')).stderr).toMatch(/--file is required/);

      const unknown = await admin('automation', 'export', id24, '--json');
      expect(unknown.exitCode).toBe(1);
      expect(unknown.json).toMatchObject({ error: { code: 'not_found' } });
      expect((await admin('automation', 'update', id24, '--file', definitionFile(EXIT_ONLY))).exitCode).toBe(1);
      const bare = (await admin('automation', 'create', '--org', orgId, '--name', 'Bare', '--json')).json!.id as string;
      const none = await admin('automation', 'export', bare);
      expect(none.exitCode).toBe(1);
      expect(none.stderr).toMatch(/has no published definition/);
    });

    it('exits 1 for a new version of an archived automation (conflict)', async () => {
      const orgId = (await admin('org', 'create', '--name', 'Archived Co', '--json')).json!.id as string;
      const id = (await admin('automation', 'create', '--org', orgId, '--name', 'Old', '--status', 'archived', '--json')).json!
        .id as string;
      const refused = await admin('automation', 'update', id, '--file', definitionFile(EXIT_ONLY), '--json');
      expect(refused.exitCode).toBe(1);
      expect(refused.json).toMatchObject({ error: { code: 'conflict' } });
    });
  });

  it.each([
    [['org', 'create'], /--name is required/],
    [['org', 'create', '--name', 'X', '--credits=-5'], /--credits must be a non-negative integer/],
    [['org', 'create', '--name', 'X', '--bogus'], /Unknown option '--bogus'/],
    [['key', 'create', '--org', 'x', '--scopes', 'all', '--mode', 'prod'], /--mode must be live or test/],
    [['credits', 'set', '--org', 'x', '--amount', '1', '--overage', 'maybe'], /--overage must be on or off/],
    [['key', 'revoke'], /usage: herald admin key revoke ID/],
    [['frobnicate', 'everything'], /unknown command "frobnicate everything"/],
    [['org'], /"org" needs one of: create, list, postal-address/],
  ])('exits 2 with a clear message for %j', async (argv, message) => {
    const result = await admin(...argv, '--json');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.json).toMatchObject({ error: { code: 'usage' } });
  });

  it('refuses gated and unknown scopes with exit 2', async () => {
    const orgId = (await admin('org', 'create', '--name', 'Scoped', '--json')).json!.id as string;
    const gated = await admin('key', 'create', '--org', orgId, '--scopes', 'assistant.chat:write', '--json');
    expect(gated.exitCode).toBe(2);
    expect(gated.stderr).toMatch(/gated/);
    const unknown = await admin('key', 'create', '--org', orgId, '--scopes', 'me:write', '--json');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/unknown scope "me:write"/);
  });

  it('exits 1 for a missing workspace or a duplicate', async () => {
    const missing = await admin('key', 'create', '--org', '0'.repeat(24), '--scopes', 'all', '--json');
    expect(missing.exitCode).toBe(1);
    expect(missing.json).toMatchObject({ error: { code: 'not_found' } });
    await admin('org', 'create', '--name', 'Dup', '--slug', 'dup-slug');
    const dup = await admin('org', 'create', '--name', 'Dup', '--slug', 'dup-slug', '--json');
    expect(dup.exitCode).toBe(1);
    expect(dup.json).toMatchObject({ error: { code: 'conflict' } });
  });

  it('revokes a key', async () => {
    const orgId = (await admin('org', 'create', '--name', 'Revoker', '--json')).json!.id as string;
    const keyId = (await admin('key', 'create', '--org', orgId, '--scopes', 'all', '--json')).json!.id as string;
    const revoked = await admin('key', 'revoke', keyId, '--json');
    expect(revoked.exitCode).toBe(0);
    expect(revoked.json!.revoked_at).toEqual(expect.any(String));
  });

  it('works as a real process through `npx herald`: one JSON object on stdout, exit codes kept', async () => {
    const env = { ...process.env, ...stack.env, HERALD_DATA_DIR: mkdtempSync(join(tmpdir(), 'herald-cli-')) };
    const cli = join(REPO_ROOT, 'src/cli/herald.mjs');
    const ok = await run(process.execPath, [cli, 'admin', 'org', 'create', '--name', 'Process Co', '--json'], { env, cwd: REPO_ROOT });
    const parsed = JSON.parse(ok.stdout) as Record<string, unknown>;
    expect(parsed).toMatchObject({ name: 'Process Co', slug: 'process-co' });
    const bad = await run(process.execPath, [cli, 'admin', 'org', 'create', '--json'], { env, cwd: REPO_ROOT }).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect('code' in bad && bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ error: { code: 'usage', message: '--name is required' } });
    expect(bad.stderr).toMatch(/--name is required/);
  });

  describe('as a real process (`node src/cli/herald.mjs admin … --json`)', () => {
    interface ProcessResult {
      exitCode: number;
      stdout: string;
      stderr: string;
      json: Record<string, unknown>;
    }
    /** Commands that answered exit 0 with their JSON, by name ("org create", "invite"). */
    const succeeded = new Set<string>();

    async function cli(...argv: string[]): Promise<ProcessResult> {
      const env = { ...process.env, ...stack.env, HERALD_DATA_DIR: mkdtempSync(join(tmpdir(), 'herald-cli-')) };
      const result = await run(process.execPath, [join(REPO_ROOT, 'src/cli/herald.mjs'), 'admin', ...argv, '--json'], {
        env,
        cwd: REPO_ROOT,
      }).then(
        ({ stdout, stderr }) => ({ exitCode: 0, stdout, stderr }),
        (error: { code: number; stdout: string; stderr: string }) => ({ exitCode: error.code, stdout: error.stdout, stderr: error.stderr }),
      );
      expect(result.stdout.trim().split('\n'), `${argv.join(' ')}\n${result.stderr}`).toHaveLength(1);
      const json = JSON.parse(result.stdout) as Record<string, unknown>;
      if (result.exitCode === 0) succeeded.add(listedCommands().includes(argv[0]) ? argv[0]! : `${argv[0]} ${argv[1]}`);
      return { ...result, json };
    }

    /** Every command the usage lists: its leading lowercase words ("key revoke", "sign-in-link"). */
    const listedCommands = () =>
      adminUsage()
        .split('\n')
        .slice(1)
        .map((line) => /^\s*herald admin ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)/.exec(line)?.[1]);

    it('runs every admin command: one JSON object on stdout, exit 0', { timeout: 300_000 }, async () => {
      const org = await cli('org', 'create', '--name', 'Every Command Co', '--credits', '10');
      expect(org.exitCode, org.stderr).toBe(0);
      expect(org.json).toMatchObject({ name: 'Every Command Co', slug: 'every-command-co', credits: 10 });
      const orgId = org.json.id as string;
      expect((await cli('org', 'list')).json.data).toEqual(expect.arrayContaining([expect.objectContaining({ id: orgId })]));
      expect((await cli('org', 'postal-address', '--org', orgId, '--address', '1 Main Street')).json).toMatchObject({
        id: orgId,
        postal_address: '1 Main Street',
      });
      expect((await cli('credits', 'set', '--org', orgId, '--amount', '7', '--overage', 'on')).json).toMatchObject({
        credits: 7,
        overage: true,
      });

      // The one-word commands: the only way into a new workspace's dashboard in production.
      const invite = await cli('invite', '--org', orgId, '--email', 'New.Person@Example.com', '--role', 'owner');
      expect(invite.exitCode, invite.stderr).toBe(0);
      expect(invite.json).toMatchObject({
        org_id: orgId,
        email: 'new.person@example.com',
        role: 'owner',
        invite_id: expect.any(String),
        expires_at: expect.any(String),
      });
      expect(invite.json.url).toMatch(/^http:\/\/herald\.test\/dashboard\/invite\/[\w-]{43}$/);
      // Exactly as `npm start`'s banner prints it.
      const link = await cli('sign-in-link', '--org', orgId);
      expect(link.exitCode, link.stderr).toBe(0);
      expect(link.json).toMatchObject({ org_id: orgId, email: 'owner@every-command-co.herald.invalid', expires_at: expect.any(String) });
      expect(link.json.url).toMatch(/^http:\/\/herald\.test\/dashboard\/sign-in\/[\w-]{43}$/);

      const key = await cli('key', 'create', '--org', orgId, '--scopes', 'all', '--name', 'ci');
      expect(key.json).toMatchObject({ org_id: orgId, name: 'ci', mode: 'test' });
      expect(key.json.key).toMatch(/^hrld_test_/);
      const keys = await cli('key', 'list', '--org', orgId);
      expect(keys.json.data).toEqual([expect.objectContaining({ id: key.json.id })]);
      expect(keys.stdout).not.toContain(key.json.key as string);
      expect((await cli('key', 'revoke', key.json.id as string)).json).toMatchObject({ id: key.json.id, revoked_at: expect.any(String) });

      const domain = await cli('domain', 'add', '--org', orgId, '--domain', 'mail.process.example', '--verified');
      expect(domain.json).toMatchObject({ org_id: orgId, domain: 'mail.process.example', status: 'verified' });
      const domainId = domain.json.id as string;
      expect((await cli('domain', 'list', '--org', orgId)).json.data).toEqual([expect.objectContaining({ id: domainId })]);
      expect((await cli('sender', 'add', '--domain', domainId, '--email', 'hi@mail.process.example', '--name', 'Hi')).json).toMatchObject({
        email: 'hi@mail.process.example',
        org_id: orgId,
      });
      expect((await cli('sender', 'list', '--domain', domainId)).json.data).toEqual([
        expect.objectContaining({ email: 'hi@mail.process.example' }),
      ]);

      const automation = await cli('automation', 'create', '--org', orgId, '--name', 'Welcome', '--file', definitionFile(EXIT_ONLY));
      expect(automation.json).toMatchObject({ name: 'Welcome', trigger_type: 'contact.created' });
      expect((await cli('automation', 'list', '--org', orgId)).json.data).toEqual([expect.objectContaining({ id: automation.json.id })]);
      expect((await cli('automation', 'update', automation.json.id as string, '--file', definitionFile(EXIT_ONLY))).json).toMatchObject({
        version: 2,
      });
      expect((await cli('automation', 'export', automation.json.id as string)).json).toMatchObject({ version: 2, definition: EXIT_ONLY });

      const grantee = (await cli('org', 'create', '--name', 'Process Grantee')).json.id as string;
      const em = stack.orm.em.fork();
      const template = em.create(Template, { orgId, name: 'Receipt' });
      await em.flush();
      expect((await cli('template', 'share', '--template', template.id, '--org', grantee)).json).toMatchObject({
        template_id: template.id,
        org_id: grantee,
      });
      expect((await cli('template', 'shares', '--template', template.id)).json.data).toEqual([
        expect.objectContaining({ org_id: grantee }),
      ]);

      // No worker polls this stack's task queue: the run is started, the wait gives up (exit 1).
      // The verification itself, through a worker, is test/temporal/domain-verification.test.ts.
      const verify = await cli('domain', 'verify', domainId, '--timeout', '1');
      expect(verify.exitCode, verify.stderr).toBe(1);
      expect(verify.json).toMatchObject({ error: { code: 'service_unavailable' } });
      succeeded.add('domain verify');

      expect((await cli('reputation', 'show', '--org', orgId)).json).toMatchObject({ paused_at: null });
      expect((await cli('reputation', 'policy', '--org', orgId, '--pause', 'all', '--min-volume', '500')).json).toMatchObject({
        pause: 'all',
        min_volume: 500,
      });
      await em
        .getConnection()
        .execute(`update organizations set reputation_paused_at = now(), reputation_pause = '{"scope":"all"}'::jsonb where id = ?`, [
          orgId,
        ]);
      expect((await cli('reputation', 'resume', '--org', orgId)).json).toMatchObject({ org_id: orgId, resumed_by: 'operator' });

      expect((await cli('encryption', 'status')).json).toMatchObject({ key_ids: [expect.stringMatching(/^[0-9a-f]{16}$/)] });
      expect((await cli('encryption', 're-encrypt')).json).toMatchObject({ complete: true });

      expect([...succeeded].sort()).toEqual(listedCommands().sort());
    });

    it('exits 1 with the error as JSON when what a command names does not exist', async () => {
      const missing = await cli('sign-in-link', '--org', '0'.repeat(24));
      expect(missing.exitCode).toBe(1);
      expect(missing.json).toMatchObject({ error: { code: 'not_found' } });
      expect(missing.stderr).toMatch(/has no such person/);
    });

    it('exits 1 and creates nothing for an invitation to an address that already has access, or one demoting an owner', async () => {
      const org = await admin('org', 'create', '--name', 'Invited Twice', '--json');
      const orgId = org.json!.id as string;
      const auth = createDashboardAuthService({ orm: stack.orm });
      const { token } = await auth.invite({ orgId, email: 'has.access@example.com', role: 'member' });
      await auth.acceptInvite(token, { name: 'Has Access', password: 'a long passphrase here' });
      const again = await cli('invite', '--org', orgId, '--email', 'Has.Access@example.com', '--role', 'owner');
      expect(again.exitCode, again.stderr).toBe(1);
      expect(again.json).toMatchObject({ error: { code: 'conflict' } });
      expect(again.stderr).toMatch(/has\.access@example\.com already has access to this workspace/);
      const demote = await cli('invite', '--org', orgId, '--email', 'owner@invited-twice.herald.invalid');
      expect(demote.exitCode).toBe(1);
      expect(demote.stderr).toMatch(/is an owner; an invitation cannot change their role/);
      expect(await stack.orm.em.fork().count(DashboardInvite, { orgId }, ALL_TENANTS)).toBe(1);
    });

    const id = '0123456789abcdef01234567';
    it.each([
      [['org', 'create'], /--name is required/],
      [['org', 'list', 'extra'], /usage: herald admin org list/],
      [['org', 'postal-address', '--org', id], /--address or --clear is required/],
      [['credits', 'set', '--org', id], /--amount is required/],
      [['invite', '--org', id], /--email is required/],
      [['invite', '--org', id, '--email', 'a@example.com', '--role', 'admin'], /--role must be owner or member/],
      [['sign-in-link'], /--org is required/],
      [['sign-in-link', '--org'], /Option '--org'.* argument/],
      [['key', 'create', '--org', id, '--scopes', 'all', '--mode', 'prod'], /--mode must be live or test/],
      [['key', 'revoke'], /usage: herald admin key revoke ID/],
      [['key', 'list', '--bogus'], /Unknown option '--bogus'/],
      [['domain', 'add', '--org', id], /--domain is required/],
      [['domain', 'list', '--org'], /Option '--org'.* argument/],
      [['domain', 'verify', 'not-an-id'], /24-character hexadecimal/],
      [['sender', 'add', '--domain', id, '--email', 'a@example.com'], /--name is required/],
      [['sender', 'list'], /--domain is required/],
      [['automation', 'create', '--org', id], /--name is required/],
      [['automation', 'update', id], /--file is required/],
      [['automation', 'export'], /usage: herald admin automation export ID/],
      [['automation', 'list'], /--org is required/],
      [['template', 'share', '--template', id], /--org is required/],
      [['template', 'shares'], /--template is required/],
      [['org'], /"org" needs one of: create, list, postal-address/],
      [['frobnicate'], /unknown command "frobnicate"/],
    ])('exits 2 with a clear message for %j', async (argv, message) => {
      const result = await cli(...argv);
      expect(result.exitCode, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.json).toMatchObject({ error: { code: 'usage' } });
    });
  });
});
