/**
 * The IAM check's own parts (infra/iam): names mapped onto one deployment, the template's
 * policies resolved, and the simulator's verdicts on calls inside and outside a policy. The check
 * itself runs over the recorded calls in `cargo xtask infra-test`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type Call, EXPECTED, againstList, check, missingCalls, readListedGrants, unusedGrants } from '../iam/check';
import { arn, canonicalArn, namesFromOutputs } from '../iam/names';
import { type Policies, cdkPolicies, renderPolicyDocument, terraformTestFile } from '../iam/policies';
import { loadSchema } from '../lib/schema';
import { synth } from './helpers';

const schema = loadSchema();

function call(fn: Call['fn'], action: string, resource: string, context: Record<string, string> = {}): Call {
  return { fn, action, resource, context, seenIn: new Set(['test']) };
}

describe('the IAM check', () => {
  it('maps the physical names a recording saw onto one deployment, and leaves unknown ones', () => {
    const names = namesFromOutputs(
      {
        AccountsTableName: 'Atelier-dev-Accounts-X1',
        QueueUrl: 'http://127.0.0.1:4613/000000000000/Atelier-dev-JobsQueue-Y2',
        BucketName: 'atelier-dev-assets-z3',
        StripeKeysSecretArn: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:StripeKeys-AbCdEf',
      },
      schema,
    );
    const rec = (r: string) => canonicalArn(r, names);
    assert.equal(rec('arn:aws:dynamodb:us-east-1:000000000000:table/Atelier-dev-Accounts-X1'), arn.table('accounts'));
    assert.equal(rec('arn:aws:s3:::atelier-dev-assets-z3/uploads/u/a.png'), `${arn.bucket('assets')}/uploads/u/a.png`);
    assert.equal(rec('arn:aws:sqs:us-east-1:000000000000:Atelier-dev-JobsQueue-Y2'), arn.queue('jobs'));
    assert.equal(rec('arn:aws:secretsmanager:us-east-1:000000000000:secret:StripeKeys-AbCdEf'), arn.secret('stripe-keys'));
    assert.equal(rec('arn:aws:dynamodb:us-east-1:000000000000:table/other'), 'arn:aws:dynamodb:us-east-1:000000000000:table/other');
  });

  it('resolves every resource of every function policy in the synthesized template', () => {
    const policies = cdkPolicies(synth('prod').json, schema);
    for (const [fn, list] of Object.entries(policies)) {
      assert.ok(list.length > 0, fn);
      assert.ok(!JSON.stringify(list).includes('unresolved:'), `${fn}: ${JSON.stringify(list)}`);
    }
  });

  it('plans every table of the schema with its ARN', () => {
    const file = terraformTestFile(schema);
    for (const d of schema) assert.ok(file.includes(`aws_dynamodb_table.this["${d.logical}"]`), d.logical);
  });

  it('renders a policy document as the provider does, conditions grouped by test', () => {
    const doc = renderPolicyDocument('data.x', {
      statement: [
        {
          sid: null,
          effect: null,
          actions: ['s3:ListBucket'],
          not_actions: null,
          resources: ['arn:aws:s3:::assets'],
          not_resources: null,
          condition: [{ test: 'StringLike', variable: 's3:prefix', values: ['uploads/*'] }],
          principals: [],
          not_principals: [],
        },
      ],
    });
    assert.deepEqual(doc.Statement, [
      {
        Effect: 'Allow',
        Action: ['s3:ListBucket'],
        Resource: ['arn:aws:s3:::assets'],
        Condition: { StringLike: { 's3:prefix': ['uploads/*'] } },
      },
    ]);
  });

  it('allows a call inside a policy and names every call outside it, conditions included', async () => {
    const policy = (statements: object[]) => [{ name: 'p', policy: { Version: '2012-10-17', Statement: statements } }];
    const policies = {
      api: policy([
        { Effect: 'Allow', Action: 'dynamodb:PutItem', Resource: arn.table('jobs') },
        {
          Effect: 'Allow',
          Action: 's3:ListBucket',
          Resource: arn.bucket('assets'),
          Condition: { StringLike: { 's3:prefix': ['uploads/*'] } },
        },
      ]),
      consumer: policy([]),
      sweeper: policy([]),
    } as unknown as Policies;
    const denials = await check(
      [
        call('api', 'dynamodb:PutItem', arn.table('jobs')),
        call('api', 'dynamodb:ConditionCheckItem', arn.table('budget')),
        call('api', 's3:ListBucket', arn.bucket('assets'), { 's3:prefix': 'uploads/u/' }),
        call('api', 's3:ListBucket', arn.bucket('assets'), { 's3:prefix': 'results/' }),
        call('consumer', 'dynamodb:PutItem', arn.table('jobs')),
      ],
      { test: policies },
    );
    assert.equal(denials.length, 3, denials.join('\n'));
    assert.match(denials[0]!, /api dynamodb:ConditionCheckItem .*table\/budget/);
    assert.match(denials[1]!, /api s3:ListBucket .*results\//);
    assert.match(denials[2]!, /consumer dynamodb:PutItem/);
    assert.deepEqual(unusedGrants(policies, [call('api', 'dynamodb:PutItem', arn.table('jobs'))]), [
      `api s3:ListBucket ${arn.bucket('assets')}`,
    ]);
  });

  it('fails on an unused grant the list does not name, and only reports a listed one a run used', () => {
    const logs = 'arn:aws:logs:us-east-1:000000000000:log-group:/aws/lambda/api:*';
    const listed = [{ fn: 'api' as const, resource: logs, actions: ['logs:PutLogEvents'], reason: 'Lambda writes the logs' }];
    const unused = [`api logs:PutLogEvents ${logs}`, `api dynamodb:UpdateItem ${arn.table('payments')}`];
    assert.deepEqual(againstList(unused, listed), { unlisted: [`api dynamodb:UpdateItem ${arn.table('payments')}`], stale: [] });
    assert.deepEqual(againstList([], listed), { unlisted: [], stale: [`api logs:PutLogEvents ${logs}`] });
  });

  it('keeps a reason for every grant the list names, and the list names no index action but Query', () => {
    for (const e of readListedGrants()) {
      assert.ok(e.reason.length > 20, `${e.fn} ${e.resource}`);
      if (e.resource.includes('/index/')) assert.deepEqual(e.actions, ['dynamodb:Query'], e.resource);
    }
  });

  it('cannot pass on nothing: a function with no call, or without an expected one, is named', () => {
    const seen = (source: string, fn: Call['fn'], action: string, resource: string): Call => ({
      ...call(fn, action, resource),
      seenIn: new Set([source]),
    });
    const expected = {
      chaos: { api: [], consumer: [], sweeper: [] },
      cloud: { api: [], consumer: ['secretsmanager:GetSecretValue', 'dynamodb:PutItem table/ledger'], sweeper: [] },
    };
    const harness = (['api', 'consumer', 'sweeper'] as const).map((fn) => seen('chaos', fn, 'dynamodb:Query', arn.table('jobs')));
    // The deployed functions' traffic bypassing their proxies: only presigned S3 calls left.
    const presignedOnly = [
      seen('cloud', 'api', 's3:PutObject', `${arn.bucket('assets')}/uploads/u/a`),
      seen('cloud', 'consumer', 's3:GetObject', `${arn.bucket('assets')}/results/u/j`),
    ];
    assert.deepEqual(missingCalls([...harness, ...presignedOnly], expected), [
      'cloud: consumer recorded no secretsmanager:GetSecretValue',
      'cloud: consumer recorded no dynamodb:PutItem table/ledger',
      'cloud: sweeper recorded no call at all',
    ]);
    const routed = [
      ...presignedOnly,
      seen('cloud', 'consumer', 'secretsmanager:GetSecretValue', arn.secret('provider-key')),
      seen('cloud', 'consumer', 'dynamodb:PutItem', arn.table('ledger')),
      seen('cloud', 'sweeper', 'dynamodb:Query', arn.table('jobs')),
    ];
    assert.deepEqual(missingCalls([...harness, ...routed], expected), []);
    // The harness's calls do not stand in for the cloud's.
    assert.match(missingCalls(harness, expected).join('\n'), /cloud: api recorded no call at all/);
    for (const source of Object.values(EXPECTED)) {
      for (const wanted of Object.values(source)) assert.ok(wanted.length > 0, 'every function has expected calls');
    }
  });
});
