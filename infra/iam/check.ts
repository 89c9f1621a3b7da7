/**
 * The IAM check: every AWS call each function made during the fault harness
 * (`tests/tests/chaos.rs`) and the local cloud's end-to-end test (`cargo xtask cloud-test`), as
 * the wire proxy recorded it (principal, action, resource ARN; a transaction is one action per
 * item), evaluated by an IAM policy simulator (`@cloud-copilot/iam-simulate`) against that
 * function's role policies in the synthesized CloudFormation template and in the Terraform
 * module. ministack plays no part in the verdict.
 *
 * A call a role does not allow fails the check, naming function, action and resource; grants
 * that no recorded call used are listed (least privilege). Run by `cargo xtask infra-test`:
 *
 *   node --import tsx iam/check.ts --calls DIR --template T.json… [--terraform-plan P.jsonl]
 *   node --import tsx iam/check.ts terraform-test-file   (prints the file the plan comes from)
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { runSimulation } from '@cloud-copilot/iam-simulate';

import { type FunctionKey } from '../lib/atelier-service';
import { type TableDef, loadSchema } from '../lib/schema';
import { ACCOUNT, FUNCTION_KEYS, type Names, arn, canonicalArn, mergeNames, namesFromOutputs } from './names';
import { type CfnTemplate, type Policies, type Statement, cdkPolicies, terraformPolicies, terraformTestFile } from './policies';

/** One recorded call, in the check's names. */
export interface Call {
  fn: FunctionKey;
  action: string;
  resource: string;
  context: Record<string, string>;
  /** The recordings it was seen in (`chaos`, `cloud`). */
  seenIn: Set<string>;
}

interface RawCall {
  principal: string;
  action: string;
  resource: string;
  context?: Record<string, string>;
}

/** The recordings a complete run leaves: the fault harness's and the local cloud's. */
const SOURCES = ['chaos', 'cloud'] as const;

/** Where each recording comes from: `chaos.jsonl`, `cloud-api.jsonl` … */
function sourceOf(file: string): string {
  return file.replace(/\.jsonl$/, '').split('-')[0]!;
}

/** Reads every recording of `dir`, mapped onto the check's names. */
export function readCalls(dir: string, schema: readonly TableDef[]): Call[] {
  const files = readdirSync(dir);
  const names: Names = {};
  for (const f of files) {
    if (f.endsWith('.names.json')) mergeNames(names, JSON.parse(readFileSync(join(dir, f), 'utf8')) as Names);
    if (f.endsWith('.outputs.json')) {
      const stacks = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, Record<string, string>>;
      for (const outputs of Object.values(stacks)) mergeNames(names, namesFromOutputs(outputs, schema));
    }
  }
  const calls = new Map<string, Call>();
  for (const f of files.filter((f) => f.endsWith('.jsonl')).sort()) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const raw = JSON.parse(line) as RawCall;
      const fn = FUNCTION_KEYS.find((k) => k === raw.principal);
      if (!fn) throw new Error(`${f}: a call by ${JSON.stringify(raw.principal)}, which is no function`);
      const call: Call = {
        fn,
        action: raw.action,
        resource: canonicalArn(raw.resource, names),
        context: raw.context ?? {},
        seenIn: new Set([sourceOf(f)]),
      };
      const key = JSON.stringify([call.fn, call.action, call.resource, call.context]);
      const seen = calls.get(key);
      if (seen) seen.seenIn.add(sourceOf(f));
      else calls.set(key, call);
    }
  }
  return [...calls.values()];
}

type Source = (typeof SOURCES)[number];

/**
 * Calls each function must have made in each recording: `service:Action`, or that and the end
 * of the resource's name in the check's names (`table/jobs`). A recording lacking one is not
 * of that function's whole traffic: deployed functions that bypassed their proxies once left
 * only the S3 calls of their presigned URLs, and the check passed on those alone.
 */
export const EXPECTED: Record<Source, Record<FunctionKey, readonly string[]>> = {
  chaos: {
    api: ['dynamodb:PutItem table/jobs', 'sqs:SendMessage'],
    consumer: ['dynamodb:UpdateItem table/jobs', 's3:PutObject'],
    sweeper: ['dynamodb:Query'],
  },
  cloud: {
    // Cold start reads both secrets; the submit's transaction and doorbell; presigned upload.
    api: [
      'secretsmanager:GetSecretValue secret:stripe-keys',
      'secretsmanager:GetSecretValue secret:address-key',
      'dynamodb:PutItem table/jobs',
      'dynamodb:PutItem table/ledger',
      'sqs:SendMessage',
      's3:PutObject',
    ],
    consumer: [
      'secretsmanager:GetSecretValue secret:model-provider-key',
      'dynamodb:UpdateItem table/jobs',
      'dynamodb:PutItem table/attempts',
      'dynamodb:PutItem table/ledger',
      's3:GetObject',
      's3:PutObject',
    ],
    sweeper: [
      'secretsmanager:GetSecretValue secret:push-keys',
      'dynamodb:Query',
      'dynamodb:UpdateItem table/jobs',
      'dynamodb:PutItem table/ledger',
      'sqs:SendMessage',
    ],
  },
};

/** Every (source, function) that recorded no call, and every expected call a pair lacks. */
export function missingCalls(calls: readonly Call[], expected = EXPECTED): string[] {
  const out: string[] = [];
  for (const source of SOURCES) {
    for (const fn of FUNCTION_KEYS) {
      const mine = calls.filter((c) => c.fn === fn && c.seenIn.has(source));
      if (mine.length === 0) {
        out.push(`${source}: ${fn} recorded no call at all`);
        continue;
      }
      for (const want of expected[source][fn]) {
        const [action, resource = ''] = want.split(' ');
        if (!mine.some((c) => c.action === action && c.resource.endsWith(resource))) {
          out.push(`${source}: ${fn} recorded no ${want}`);
        }
      }
    }
  }
  return out;
}

/** Fails unless every source was recorded after the code last changed. */
function checkFresh(dir: string, root: string): void {
  const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  for (const s of SOURCES) {
    if (!files.some((f) => sourceOf(f) === s)) {
      throw new Error(`no ${s} recording in ${dir}: run \`cargo xtask test\` (it records both, then checks)`);
    }
  }
  const oldest = Math.min(...files.map((f) => statSync(join(dir, f)).mtimeMs));
  const newest = Math.max(...FRESHNESS.flatMap((p) => codeMtimes(root, p)));
  if (newest > oldest) {
    throw new Error(`the recordings in ${dir} are older than the code: run \`cargo xtask test\` again`);
  }
}

/**
 * What a recording depends on: the functions' code, the proxy that records, the harness and
 * the end-to-end test that drive the calls (with their helpers), and the local cloud that
 * routes the deployed functions through their proxies. A path ending in `*` is a prefix.
 */
const FRESHNESS = [
  'shared/src',
  'functions',
  'tools/wire-proxy/src',
  'tests/tests/chaos.rs',
  'tests/tests/chaos',
  'tests/tests/cloud_e2e.rs',
  'tests/src',
  'xtask/src/cloud*',
];

function codeMtimes(root: string, path: string): number[] {
  if (!path.endsWith('*')) return [newestMtime(join(root, path))];
  const parent = join(root, path, '..');
  const prefix = path.split('/').pop()!.slice(0, -1);
  return readdirSync(parent)
    .filter((e) => e.startsWith(prefix))
    .map((e) => newestMtime(join(parent, e)));
}

function newestMtime(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((e) => (e === 'target' ? 0 : newestMtime(join(path, e)))));
}

/** The simulator's verdict on one call under one function's policies. */
async function verdict(call: Call, policies: Policies): Promise<string> {
  const result = await runSimulation(
    {
      request: {
        principal: arn.session(call.fn),
        action: call.action,
        resource: { resource: call.resource, accountId: ACCOUNT },
        contextVariables: call.context,
      },
      identityPolicies: policies[call.fn].map((p) => ({ name: p.name, policy: p.policy })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (result.resultType === 'error') return `error: ${result.errors.message}`;
  return result.overallResult;
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM's wildcard match (`*`, `?`), case-sensitive as for resources. */
function matches(pattern: string, value: string, ignoreCase = false): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`, ignoreCase ? 'i' : '').test(value);
}

/** Every (action, resource) an Allow statement grants that no call of the function used. */
export function unusedGrants(policies: Policies, calls: readonly Call[]): string[] {
  const out: string[] = [];
  for (const fn of FUNCTION_KEYS) {
    const mine = calls.filter((c) => c.fn === fn);
    for (const { policy } of policies[fn]) {
      for (const s of list<Statement>(policy.Statement)) {
        if (s.Effect !== 'Allow') continue;
        for (const action of list(s.Action)) {
          for (const resource of list(s.Resource)) {
            const used = mine.some((c) => matches(action, c.action, true) && matches(resource, c.resource));
            if (!used) out.push(`${fn} ${action} ${resource}`);
          }
        }
      }
    }
  }
  return [...new Set(out)];
}

/** A grant no recorded call uses, kept on purpose: `infra/iam/unused-grants.json`. */
export interface ListedGrant {
  fn: FunctionKey;
  resource: string;
  actions: string[];
  reason: string;
}

export const UNUSED_GRANTS_FILE = join(__dirname, 'unused-grants.json');

/** The list, refused when an entry has no reason or names no function. */
export function readListedGrants(path = UNUSED_GRANTS_FILE): ListedGrant[] {
  const entries = JSON.parse(readFileSync(path, 'utf8')) as ListedGrant[];
  for (const e of entries) {
    if (!FUNCTION_KEYS.includes(e.fn)) throw new Error(`${path}: ${JSON.stringify(e.fn)} is no function`);
    if (!e.reason?.trim() || !e.resource || !e.actions?.length) {
      throw new Error(`${path}: the entry for ${e.fn} ${e.resource} needs a resource, actions and a reason`);
    }
  }
  return entries;
}

/**
 * Unused grants split by the list: `unlisted` fail the check (a new grant nothing uses, or a
 * used one the code stopped calling); `stale` entries name nothing unused any more (granted no
 * longer, or now recorded) and are only reported, since a run may or may not drive a path.
 */
export function againstList(unused: readonly string[], listed: readonly ListedGrant[]): { unlisted: string[]; stale: string[] } {
  const names = (e: ListedGrant) => e.actions.map((a) => `${e.fn} ${a} ${e.resource}`);
  const allowed = new Set(listed.flatMap(names));
  const unlisted = unused.filter((g) => !allowed.has(g));
  const open = new Set(unused);
  const stale = listed.flatMap(names).filter((g) => !open.has(g));
  return { unlisted, stale };
}

/** `fn action resource` lines grouped as `fn resource: action, action`. */
function byResource(grants: readonly string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const g of grants) {
    const [fn, action, resource] = g.split(' ');
    const key = `${fn} ${resource}`;
    groups.set(key, [...(groups.get(key) ?? []), action!]);
  }
  return [...groups].map(([key, actions]) => `${key}: ${actions.join(', ')}`);
}

/** The check over every policy source; returns the denials (empty: every call is allowed). */
export async function check(calls: readonly Call[], sources: Record<string, Policies>): Promise<string[]> {
  const denials: string[] = [];
  for (const [source, policies] of Object.entries(sources)) {
    for (const call of calls) {
      const v = await verdict(call, policies);
      if (v !== 'Allowed') {
        const ctx = Object.keys(call.context).length ? ` ${JSON.stringify(call.context)}` : '';
        denials.push(`${source}: ${call.fn} ${call.action} ${call.resource}${ctx} → ${v} (seen in ${[...call.seenIn].join(', ')})`);
      }
    }
  }
  return denials;
}

function arg(args: string[], name: string): string[] {
  return args.flatMap((a, i) => (a === name && args[i + 1] ? [args[i + 1]!] : []));
}

async function main(args: string[]): Promise<number> {
  const schema = loadSchema();
  if (args[0] === 'terraform-test-file') {
    process.stdout.write(terraformTestFile(schema));
    return 0;
  }
  const root = join(__dirname, '..', '..');
  const [dir] = arg(args, '--calls');
  if (!dir) throw new Error('--calls DIR is required');
  checkFresh(dir, root);
  const calls = readCalls(dir, schema);
  const missing = missingCalls(calls);
  for (const m of missing) console.error(`iam: MISSING ${m}`);
  if (missing.length > 0) {
    console.error(`iam: ${missing.length} expected calls were not recorded: a function's traffic bypassed its recording proxy, or the tests no longer drive it`);
    return 1;
  }
  const sources: Record<string, Policies> = {};
  for (const t of arg(args, '--template')) {
    const stage = /Atelier-(\w+)\.template\.json$/.exec(t)?.[1] ?? t;
    sources[`CDK ${stage}`] = cdkPolicies(JSON.parse(readFileSync(t, 'utf8')) as CfnTemplate, schema);
  }
  for (const p of arg(args, '--terraform-plan')) sources.Terraform = terraformPolicies(readFileSync(p, 'utf8'));
  const byFn = FUNCTION_KEYS.map((k) => `${k} ${calls.filter((c) => c.fn === k).length}`).join(', ');
  console.log(`iam: ${calls.length} distinct calls recorded (${byFn}); policies from ${Object.keys(sources).join(', ')}`);
  const listed = readListedGrants();
  let unlistedCount = 0;
  for (const [source, policies] of Object.entries(sources)) {
    const unused = unusedGrants(policies, calls);
    const { unlisted, stale } = againstList(unused, listed);
    console.log(`iam: ${source}: ${unused.length} grants no recorded call used, ${unused.length - unlisted.length} of them listed with a reason in iam/unused-grants.json`);
    for (const line of byResource(unlisted)) console.error(`iam: UNUSED ${source}: ${line} (remove the grant, or list it with its reason)`);
    for (const line of byResource(stale)) console.log(`iam: note: ${source}: listed but not unused in this run: ${line}`);
    unlistedCount += unlisted.length;
  }
  const denials = await check(calls, sources);
  for (const d of denials) console.error(`iam: DENIED ${d}`);
  if (denials.length > 0) {
    console.error(`iam: ${denials.length} recorded calls are not allowed by their function's role`);
    return 1;
  }
  if (unlistedCount > 0) {
    console.error(`iam: ${unlistedCount} grants no recorded call used and iam/unused-grants.json does not name`);
    return 1;
  }
  console.log(`iam: every recorded call is allowed by its function's role in ${Object.keys(sources).join(', ')}`);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(`iam: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(2);
    },
  );
}
