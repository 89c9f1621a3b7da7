/**
 * Each function's identity policies, read from what would be deployed: the synthesized
 * CloudFormation template (its intrinsics resolved onto the check's names, `names.ts`) and the
 * Terraform module (its policy documents as the AWS provider renders them, planned offline by
 * `terraform test` with the resources' ARNs overridden by the check's names).
 */
import { type FunctionKey, pascal } from '../lib/atelier-service';
import { LOGICAL_TABLE_METADATA, type TableDef } from '../lib/schema';
import { ACCOUNT, FUNCTION_KEYS, REGION, arn, outputRole } from './names';

export interface PolicyDocument {
  Version?: string;
  Statement: Statement[] | Statement;
}
export interface Statement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}
export interface NamedPolicy {
  name: string;
  policy: PolicyDocument;
}
export type Policies = Record<FunctionKey, NamedPolicy[]>;

interface CfnResource {
  Type: string;
  Properties?: Record<string, any>;
  Metadata?: Record<string, any>;
}
export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, { Value: unknown }>;
}

/** What `Ref` and `Fn::GetAtt` give for one resource, in the check's names. */
interface Resolved {
  ref: string;
  atts: Record<string, string>;
}

/**
 * The function a resource is: its construct id is the key, PascalCase — seen in its path
 * (`…/Api/Resource`, `cdk synth`) or else its logical id (`Api` + an 8-digit hash).
 */
function functionKey(logicalId: string, r: CfnResource): FunctionKey | undefined {
  const path = r.Metadata?.['aws:cdk:path'];
  if (typeof path === 'string') {
    const id = path.split('/').slice(-2, -1)[0];
    return FUNCTION_KEYS.find((k) => pascal(k) === id);
  }
  return FUNCTION_KEYS.find((k) => new RegExp(`${pascal(k)}[0-9A-F]{8}$`).test(logicalId));
}

function refOf(value: unknown): string | undefined {
  return value && typeof value === 'object' && 'Ref' in value ? String((value as { Ref: unknown }).Ref) : undefined;
}

/** The resources a policy can name, by logical id. */
function resolvable(t: CfnTemplate, schema: readonly TableDef[]): Map<string, Resolved> {
  const out = new Map<string, Resolved>();
  for (const [key, o] of Object.entries(t.Outputs ?? {})) {
    const role = outputRole(key, schema);
    const id = refOf(o.Value);
    if (!role || !id || role.service === 'dynamodb') continue;
    if (role.service === 'sqs') out.set(id, { ref: `https://sqs/${role.name}`, atts: { Arn: arn.queue(role.name) } });
    if (role.service === 's3') out.set(id, { ref: role.name, atts: { Arn: arn.bucket(role.name) } });
    if (role.service === 'secretsmanager') out.set(id, { ref: arn.secret(role.name), atts: {} });
  }
  for (const [id, r] of Object.entries(t.Resources)) {
    const logical = r.Metadata?.[LOGICAL_TABLE_METADATA];
    if (r.Type === 'AWS::DynamoDB::Table' && typeof logical === 'string') {
      out.set(id, { ref: logical, atts: { Arn: arn.table(logical), StreamArn: arn.stream(logical) } });
    }
    const key = r.Type === 'AWS::Lambda::Function' ? functionKey(id, r) : undefined;
    if (key) {
      out.set(id, { ref: key, atts: { Arn: arn.function(key) } });
      const logGroup = refOf(r.Properties?.LoggingConfig?.LogGroup);
      if (logGroup) out.set(logGroup, { ref: `/aws/lambda/${key}`, atts: { Arn: arn.logGroup(key) } });
    }
  }
  return out;
}

const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': REGION,
  'AWS::AccountId': ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

/** A template value with its intrinsics resolved; what cannot be is named `unresolved:…`. */
export function resolve(value: unknown, known: Map<string, Resolved>): unknown {
  if (Array.isArray(value)) return value.map((v) => resolve(v, known));
  if (!value || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  const unresolved = `unresolved:${JSON.stringify(value)}`;
  if ('Ref' in o) {
    const id = String(o.Ref);
    return PSEUDO[id] ?? known.get(id)?.ref ?? unresolved;
  }
  if ('Fn::GetAtt' in o) {
    const [id, att] = o['Fn::GetAtt'] as [string, string];
    return known.get(id)?.atts[att] ?? unresolved;
  }
  if ('Fn::Join' in o) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolve(p, known)).join(sep);
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolve(v, known)]));
}

/** Each function's policies in a synthesized template: its role's inline and attached ones. */
export function cdkPolicies(t: CfnTemplate, schema: readonly TableDef[]): Policies {
  const known = resolvable(t, schema);
  const out = Object.fromEntries(FUNCTION_KEYS.map((k) => [k, [] as NamedPolicy[]])) as Policies;
  const roleOf = new Map<string, FunctionKey>();
  for (const [id, r] of Object.entries(t.Resources)) {
    const key = r.Type === 'AWS::Lambda::Function' ? functionKey(id, r) : undefined;
    const role = r.Properties?.Role?.['Fn::GetAtt']?.[0];
    if (key && typeof role === 'string') roleOf.set(role, key);
  }
  for (const [id, r] of Object.entries(t.Resources)) {
    if (r.Type === 'AWS::IAM::Policy') {
      for (const role of (r.Properties?.Roles ?? []) as unknown[]) {
        const key = roleOf.get(refOf(role) ?? '');
        if (key) out[key].push({ name: id, policy: resolve(r.Properties!.PolicyDocument, known) as PolicyDocument });
      }
    }
    const key = r.Type === 'AWS::IAM::Role' ? roleOf.get(id) : undefined;
    if (key) {
      for (const p of (r.Properties?.Policies ?? []) as { PolicyName: string; PolicyDocument: unknown }[]) {
        out[key].push({ name: `${id}/${p.PolicyName}`, policy: resolve(p.PolicyDocument, known) as PolicyDocument });
      }
      if ((r.Properties?.ManagedPolicyArns ?? []).length > 0) {
        throw new Error(`role ${id} of ${key} has managed policies, which the check cannot read`);
      }
    }
  }
  for (const k of FUNCTION_KEYS) {
    if (out[k].length === 0) throw new Error(`no policy found for the ${k} function's role in the template`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Terraform

/**
 * A `terraform test` file that plans the module offline with the real AWS provider (which
 * renders `aws_iam_policy_document` locally) and every resource a policy names overridden with
 * the check's ARNs, so the planned role policies are known.
 */
export function terraformTestFile(schema: readonly TableDef[]): string {
  const overrides: [string, Record<string, string>][] = [];
  for (const d of schema) {
    overrides.push([`aws_dynamodb_table.this["${d.logical}"]`, { arn: arn.table(d.logical), stream_arn: arn.stream(d.logical) }]);
  }
  for (const k of FUNCTION_KEYS) {
    overrides.push([`aws_iam_role.function["${k}"]`, { id: k, name: k, arn: `arn:aws:iam::${ACCOUNT}:role/${k}` }]);
    overrides.push([`aws_cloudwatch_log_group.function["${k}"]`, { arn: arn.logGroup(k).replace(/:\*$/, '') }]);
    overrides.push([`aws_lambda_function.this["${k}"]`, { arn: arn.function(k), function_name: k }]);
  }
  overrides.push(['aws_s3_bucket.assets', { arn: arn.bucket('assets'), id: 'assets', bucket: 'assets' }]);
  overrides.push(['aws_sqs_queue.jobs', { arn: arn.queue('jobs') }]);
  overrides.push(['aws_sqs_queue.dead_letter', { arn: arn.queue('dead-letter') }]);
  overrides.push(['aws_sqs_queue.webhooks', { arn: arn.queue('webhooks') }]);
  overrides.push(['aws_secretsmanager_secret.provider_key', { arn: arn.secret('model-provider-key') }]);
  overrides.push(['aws_secretsmanager_secret.gemini_key', { arn: arn.secret('gemini-key') }]);
  overrides.push(['aws_secretsmanager_secret.signing_key', { arn: arn.secret('signing-key') }]);
  overrides.push(['aws_secretsmanager_secret.stripe_keys', { arn: arn.secret('stripe-keys') }]);
  overrides.push(['aws_secretsmanager_secret.push_keys', { arn: arn.secret('push-keys') }]);
  overrides.push(['aws_secretsmanager_secret.google_play_key', { arn: arn.secret('google-play-key') }]);
  overrides.push(['aws_secretsmanager_secret.apple_api_key', { arn: arn.secret('apple-api-key') }]);
  overrides.push(['aws_secretsmanager_secret.address_key', { arn: arn.secret('address-key') }]);
  const hcl = (values: Record<string, string>) =>
    Object.entries(values)
      .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
      .join(', ');
  const lines = [
    '# Generated by infra/iam (the IAM check): the role policies, planned offline.',
    'provider "aws" {',
    `  region                      = "${REGION}"`,
    '  access_key                  = "offline"',
    '  secret_key                  = "offline"',
    '  skip_credentials_validation = true',
    '  skip_requesting_account_id  = true',
    '  skip_metadata_api_check     = true',
    '  skip_region_validation      = true',
    '}',
    `override_data {\n  target = data.aws_caller_identity.current\n  values = { account_id = "${ACCOUNT}" }\n}`,
    ...[
      'data.aws_cloudfront_cache_policy.disabled',
      'data.aws_cloudfront_cache_policy.optimized',
      'data.aws_cloudfront_origin_request_policy.all_viewer_except_host',
    ].map((t) => `override_data {\n  target = ${t}\n  values = { id = "offline" }\n}`),
    `override_data {\n  target = data.aws_secretsmanager_random_password.address_key\n  values = { random_password = "offline" }\n}`,
    ...overrides.map(
      ([target, values]) => `override_resource {\n  target          = ${target}\n  override_during = plan\n  values          = { ${hcl(values)} }\n}`,
    ),
    'variables {\n  dist_dir = "tests/fixtures/lambda-dist"\n}',
    'run "role_policies" {\n  command = plan\n}',
  ];
  return lines.join('\n') + '\n';
}

interface TfStatement {
  sid: string | null;
  effect: string | null;
  actions: string[] | null;
  not_actions: string[] | null;
  resources: string[] | null;
  not_resources: string[] | null;
  condition: { test: string; variable: string; values: string[] }[];
  principals: unknown[];
  not_principals: unknown[];
}

/**
 * The policy an `aws_iam_policy_document` renders, from its planned arguments. Terraform reads a
 * data source that depends on resources being created only at apply, so the plan holds its
 * (fully known) statements but not its `json`; this writes them out as the provider does for the
 * arguments a role policy uses, and refuses the others.
 */
export function renderPolicyDocument(address: string, after: Record<string, unknown>): PolicyDocument {
  for (const k of ['source_policy_documents', 'override_policy_documents', 'source_json', 'override_json']) {
    if (after[k] !== null && after[k] !== undefined) throw new Error(`${address}: ${k} is not supported by the IAM check`);
  }
  const statements = (after.statement ?? []) as TfStatement[];
  return {
    Version: '2012-10-17',
    Statement: statements.map((st) => {
      if (st.principals.length > 0 || st.not_principals.length > 0) {
        throw new Error(`${address}: principals in an identity policy`);
      }
      const out: Statement = { Effect: st.effect === 'Deny' ? 'Deny' : 'Allow' };
      if (st.sid) out.Sid = st.sid;
      if (st.actions) out.Action = st.actions;
      if (st.not_actions) out.NotAction = st.not_actions;
      if (st.resources) out.Resource = st.resources;
      if (st.not_resources) out.NotResource = st.not_resources;
      if (st.condition.length > 0) {
        const c: NonNullable<Statement['Condition']> = {};
        for (const { test, variable, values } of st.condition) (c[test] ??= {})[variable] = values;
        out.Condition = c;
      }
      if ([out.Action, out.NotAction, out.Resource, out.NotResource].some((v) => JSON.stringify(v ?? []).includes('null'))) {
        throw new Error(`${address}: a value is unknown at plan; override what it names in infra/iam/policies.ts`);
      }
      return out;
    }),
  };
}

/**
 * Each function's role policies from `terraform test -json -verbose` output (its plan): the
 * provider's JSON where the document was read at plan, else the document's planned statements
 * (`renderPolicyDocument`). A role policy `aws_iam_role_policy.X[k]` takes its document from
 * `data.aws_iam_policy_document.X[k]` (the module names them alike; the check refuses a role
 * policy without its document).
 */
export function terraformPolicies(jsonLines: string): Policies {
  const plan = jsonLines
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { type: string; test_plan?: any })
    .find((m) => m.type === 'test_plan')?.test_plan;
  if (!plan) throw new Error('no plan in the terraform test output (did it pass?)');
  const changes = plan.resource_changes as { address: string; type: string; mode: string; change: { after: any } }[];
  const documents = new Map(
    changes.filter((rc) => rc.type === 'aws_iam_policy_document').map((rc) => [rc.address, rc.change.after ?? {}]),
  );
  const out = Object.fromEntries(FUNCTION_KEYS.map((k) => [k, [] as NamedPolicy[]])) as Policies;
  for (const rc of changes) {
    if (rc.type === 'aws_iam_role_policy_attachment') {
      throw new Error(`${rc.address} attaches a managed policy, which the check cannot read`);
    }
    if (rc.type !== 'aws_iam_role_policy') continue;
    const after = rc.change.after ?? {};
    const key = FUNCTION_KEYS.find((k) => k === after.role);
    if (!key) throw new Error(`${rc.address}: role ${JSON.stringify(after.role)} is no function's`);
    if (typeof after.policy === 'string') {
      // The document was read at plan: the provider's own rendering.
      out[key].push({ name: rc.address, policy: JSON.parse(after.policy) as PolicyDocument });
      continue;
    }
    const docAddress = `data.aws_iam_policy_document.${rc.address.replace(/^aws_iam_role_policy\./, '')}`;
    const doc = documents.get(docAddress);
    if (!doc) throw new Error(`${rc.address}: no ${docAddress} (name a role policy's document as the policy)`);
    out[key].push({ name: rc.address, policy: renderPolicyDocument(docAddress, doc) });
  }
  for (const k of FUNCTION_KEYS) {
    if (out[k].length === 0) throw new Error(`no aws_iam_role_policy for the ${k} function's role in the plan`);
  }
  return out;
}
