/**
 * Assertion tests: one `describe` per promise of infra/README.md (issue 6's bullet list).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';

import {
  AtelierStack,
  API_ONLY_ENV,
  CONSUMER_ONLY_ENV,
  SWEEPER_ONLY_ENV,
  CONSUMER_TIMEOUT,
  FUNCTIONS,
  type FunctionKey,
  MAX_RECEIVE_COUNT,
  METRICS,
  OUTAGE_CODES,
  BUDGET_ALERT_PERCENTS,
  PUBLIC_ROUTES,
  SIGNED_WEBHOOK_ROUTES,
  STUCK_AFTER,
} from '../lib/atelier-stack';
import { PLATFORM_PROVIDED, functionEnvironment, loadEnvNames } from '../lib/environment';
import { loadSchema } from '../lib/schema';
import { WEBHOOK_ENDPOINTS_DISABLED } from '../lib/webhooks';
import {
  actionsOf,
  actionsOn,
  functionId,
  liveEnvNames,
  referencedIds,
  resourcesOfType,
  statementsOf,
  synth,
  tableId,
} from './helpers';

const KEYS: FunctionKey[] = ['api', 'consumer', 'sweeper'];
const STREAM_READ = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
const id = (s: ReturnType<typeof synth>, c: { node: { defaultChild?: unknown } }) =>
  s.stack.getLogicalId(c.node.defaultChild as any);

describe('synthesis', () => {
  it('runs offline without AWS credentials', () => {
    // cargo xtask infra-test runs this file with every AWS_* variable removed.
    const s = synth('dev');
    assert.ok(Object.keys(s.json.Resources).length > 30);
  });

  it('refuses to build real code that has not been packaged, naming the command', () => {
    const app = new App();
    assert.throws(
      () => new AtelierStack(app, 'NoZips', { stage: 'dev', distDir: join(tmpdir(), 'atelier-no-such-dir') }),
      /cargo xtask package/,
    );
  });

  it('uses the packaged zips of the chosen architecture when they exist', () => {
    const dist = mkdtempSync(join(tmpdir(), 'atelier-dist-'));
    for (const f of Object.values(FUNCTIONS)) {
      mkdirSync(join(dist, f));
      writeFileSync(join(dist, f, 'bootstrap.zip'), 'PK\u0005\u0006' + '\u0000'.repeat(18));
    }
    const s = synth('dev', { placeholderCode: false, distDir: dist, arch: 'arm64' });
    s.template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'provided.al2023',
      Handler: 'bootstrap',
      Architectures: ['arm64'],
    });
  });

  it('builds x86_64 provided.al2023 functions by default, logging JSON', () => {
    const s = synth('dev');
    s.template.resourceCountIs('AWS::Lambda::Function', 3);
    s.template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'provided.al2023',
      Handler: 'bootstrap',
      Architectures: ['x86_64'],
      LoggingConfig: Match.objectLike({ LogFormat: 'JSON', ApplicationLogLevel: 'INFO' }),
    });
  });
});

describe('HTTP API', () => {
  const s = synth('dev');

  it('authorises with JWTs whose issuer and audience are parameters, Cognito by default', () => {
    assert.equal(s.json.Parameters?.JwtIssuer?.Default, '');
    assert.equal(s.json.Parameters?.JwtAudience?.Default, '');
    const pool = id(s, s.stack.service.userPool!);
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: {
        Issuer: {
          'Fn::If': [
            'UseCognito',
            { 'Fn::Join': ['', Match.arrayWith(['https://cognito-idp.', { Ref: pool }])] },
            { Ref: 'JwtIssuer' },
          ],
        },
        Audience: [{ 'Fn::If': ['UseCognito', Match.anyValue(), { Ref: 'JwtAudience' }] }],
      },
    });
    assert.deepEqual(s.json.Conditions?.UseCognito, { 'Fn::Equals': [{ Ref: 'JwtIssuer' }, ''] });
    const [, userPool] = resourcesOfType(s.json, 'AWS::Cognito::UserPool')[0]!;
    assert.equal(userPool.Condition, 'UseCognito', 'the pool exists only when no issuer is given');
    assert.ok(s.json.Rules?.AudienceGoesWithIssuer, 'an external issuer needs an audience');
  });

  it('requires a verified e-mail in the Cognito pool, and re-verification before an address changes', () => {
    const [, pool] = resourcesOfType(s.json, 'AWS::Cognito::UserPool')[0]!;
    assert.deepEqual(pool.Properties?.AutoVerifiedAttributes, ['email']);
    assert.deepEqual(pool.Properties?.UserAttributeUpdateSettings, { AttributesRequireVerificationBeforeUpdate: ['email'] });
  });

  it('has no per-IP front unless asked, and then CloudFront with a WAF rate rule per IP (us-east-1)', () => {
    assert.equal(resourcesOfType(s.json, 'AWS::WAFv2::WebACL').length, 0);
    // The web app's own distribution (test/web.test.ts) is not a front of the API.
    const fronts = (x: ReturnType<typeof synth>) =>
      resourcesOfType(x.json, 'AWS::CloudFront::Distribution').filter(([k]) => k !== id(x, x.stack.site!.distribution));
    assert.equal(fronts(s).length, 0);
    const f = synth('dev', { perIpRateLimit: 1000 });
    const [aclId, acl] = resourcesOfType(f.json, 'AWS::WAFv2::WebACL')[0]!;
    assert.equal(acl.Properties?.Scope, 'CLOUDFRONT');
    assert.deepEqual(acl.Properties?.DefaultAction, { Allow: {} });
    assert.deepEqual(acl.Properties?.Rules?.map((r: any) => [r.Action, r.Statement.RateBasedStatement]), [
      [{ Block: {} }, { Limit: 1000, AggregateKeyType: 'IP', EvaluationWindowSec: 300 }],
    ]);
    const [, cdn] = fronts(f)[0]!;
    const config = cdn.Properties?.DistributionConfig;
    assert.deepEqual(config.WebACLId, { 'Fn::GetAtt': [aclId, 'Arn'] });
    assert.equal(config.DefaultCacheBehavior.ViewerProtocolPolicy, 'https-only');
    assert.equal(config.DefaultCacheBehavior.AllowedMethods.length, 7, 'every method reaches the API');
    assert.ok(JSON.stringify(config.Origins).includes(id(f, f.stack.httpApi)), 'the origin is the HTTP API');
    assert.ok(f.json.Rules?.PerIpRateLimitNeedsUsEast1, 'CloudFront-scoped WAF exists in us-east-1 only');
    assert.ok(f.json.Outputs?.ApiCdnUrl);
    assert.throws(() => synth('dev', { perIpRateLimit: 5 }), /perIpRateLimit/);
  });

  it('requires the JWT on every route but the public ones', () => {
    const routes = resourcesOfType(s.json, 'AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties!);
    const byKey = new Map(routes.map((r) => [r.RouteKey as string, r]));
    assert.equal(byKey.get('ANY /{proxy+}')?.AuthorizationType, 'JWT');
    for (const p of PUBLIC_ROUTES) assert.equal(byKey.get(`GET ${p}`)?.AuthorizationType, 'NONE', p);
    for (const p of SIGNED_WEBHOOK_ROUTES) assert.equal(byKey.get(`POST ${p}`)?.AuthorizationType, 'NONE', p);
    assert.equal(routes.length, PUBLIC_ROUTES.length + SIGNED_WEBHOOK_ROUTES.length + 1, 'no other routes');
    for (const r of routes) {
      if (r.RouteKey !== 'ANY /{proxy+}') assert.equal(r.AuthorizerId, undefined);
    }
  });

  it('throttles everyone together at what the tables and functions carry, and writes access logs', () => {
    // docs/operations.md "The stage throttle": 1,000/s is a quarter of a new on-demand
    // table's 4,000 writes/s (one budget write per request) and a tenth of the account's
    // 10,000/s API Gateway quota; each caller's own budget is in the code.
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 },
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ApiAccessLogs'), 'Arn'] },
        Format: Match.stringLikeRegexp('\\$context\\.requestId'),
      },
    });
  });

  it('sends every route to the API function', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
      IntegrationUri: { 'Fn::GetAtt': [functionId(s, 'api'), 'Arn'] },
    });
    s.template.resourceCountIs('AWS::ApiGatewayV2::Integration', 1);
    assert.ok(s.json.Outputs?.ApiUrl);
  });
});

describe('queue and consumer', () => {
  const s = synth('dev');
  const consumer = s.json.Resources[functionId(s, 'consumer')]!.Properties!;
  const queueId = id(s, s.stack.queue);
  const dlqId = id(s, s.stack.deadLetterQueue);
  const queue = s.json.Resources[queueId]!.Properties!;

  it('has a visibility timeout at least six times the consumer timeout', () => {
    assert.equal(consumer.Timeout, CONSUMER_TIMEOUT.toSeconds());
    assert.ok(queue.VisibilityTimeout >= 6 * consumer.Timeout, `${queue.VisibilityTimeout} < 6 × ${consumer.Timeout}`);
  });

  it('dead-letters a message after a few failed deliveries', () => {
    assert.deepEqual(queue.RedrivePolicy, {
      deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
      maxReceiveCount: MAX_RECEIVE_COUNT,
    });
  });

  it('delivers one message at a time, to a bounded number of consumers, with partial failures', () => {
    s.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
      FunctionName: { Ref: functionId(s, 'consumer') },
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: { Ref: 'ConsumerMaxConcurrency' } },
    });
    const p = s.json.Parameters!.ConsumerMaxConcurrency;
    assert.equal(p.Type, 'Number');
    assert.ok(p.MinValue >= 2 && p.Default >= p.MinValue && p.Default <= 5);
  });

  it('lets the sweeper call a job stuck only after the consumer has surely given up', () => {
    assert.ok(STUCK_AFTER.toSeconds() > CONSUMER_TIMEOUT.toSeconds());
  });

  it('encrypts every queue and refuses plain HTTP', () => {
    for (const q of [queueId, dlqId]) {
      assert.equal(s.json.Resources[q]!.Properties!.SqsManagedSseEnabled, true);
    }
    const policies = resourcesOfType(s.json, 'AWS::SQS::QueuePolicy').map(([, r]) => JSON.stringify(r.Properties));
    assert.equal(policies.filter((p) => p.includes('"aws:SecureTransport":"false"')).length, 4);
  });
});

describe('sweeper schedule', () => {
  it('runs the sweeper every minute, without retries piling up', () => {
    const s = synth('dev');
    s.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [functionId(s, 'sweeper'), 'Arn'] } })],
    });
    s.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: functionId(s, 'sweeper') },
      MaximumRetryAttempts: 0,
    });
  });
});

describe('tables', () => {
  const schema = loadSchema();

  for (const stage of ['dev', 'prod'] as const) {
    it(`are the schema's tables, on-demand with point-in-time recovery (${stage})`, () => {
      const s = synth(stage);
      s.template.resourceCountIs('AWS::DynamoDB::Table', schema.length);
      for (const t of schema) {
        const r = s.json.Resources[tableId(s, t.logical)]!;
        assert.equal(r.Properties!.BillingMode, 'PAY_PER_REQUEST', t.logical);
        assert.deepEqual(r.Properties!.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
        assert.equal(r.Properties!.DeletionProtectionEnabled, stage === 'prod', `${t.logical} deletion protection`);
        assert.equal(r.DeletionPolicy, stage === 'prod' ? 'Retain' : 'Delete');
      }
    });
  }
});

describe('bucket', () => {
  const s = synth('dev');
  const bucketId = id(s, s.stack.bucket);
  const bucket = s.json.Resources[bucketId]!.Properties!;

  it('is private, encrypted and TLS only', () => {
    assert.deepEqual(bucket.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    assert.equal(bucket.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm, 'AES256');
    s.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('lets no object live forever: uploads after 7 days, results after a parameter the functions also read, incomplete uploads after a day', () => {
    const rules = bucket.LifecycleConfiguration.Rules as any[];
    const enabled = rules.filter((r) => r.Status === 'Enabled');
    assert.ok(enabled.some((r) => r.AbortIncompleteMultipartUpload?.DaysAfterInitiation === 1 && r.Prefix === undefined));
    assert.ok(enabled.some((r) => r.Prefix === 'uploads/' && r.ExpirationInDays === 7), 'unused uploads go after 7 days');
    assert.ok(enabled.some((r) => r.Prefix === 'results/' && r.ExpirationInDays?.Ref === 'ResultRetentionDays'));
    assert.equal(s.json.Parameters?.ResultRetentionDays?.Default, 90);
    // The functions know the same number, so a job says its images expired instead of linking to nothing.
    for (const k of ['api', 'consumer'] as const) {
      const vars = s.json.Resources[functionId(s, k)]!.Properties!.Environment!.Variables as Record<string, any>;
      assert.deepEqual(vars.ATELIER_RESULT_RETENTION_DAYS, { Ref: 'ResultRetentionDays' }, k);
    }
    // Everything the code writes lives under one of the two expiring prefixes.
    assert.deepEqual(
      enabled.filter((r) => r.ExpirationInDays !== undefined).map((r) => r.Prefix).sort(),
      ['results/', 'uploads/'],
    );
  });
});

describe('least privilege', () => {
  const s = synth('prod');
  const ledger = tableId(s, 'ledger');
  const secretId = id(s, s.stack.providerKey);
  const bucketId = id(s, s.stack.bucket);

  it('grants no wildcard actions and no managed policies', () => {
    for (const k of KEYS) {
      for (const st of statementsOf(s, k)) {
        for (const a of actionsOf(st)) assert.ok(!a.includes('*'), `${k}: ${a}`);
      }
    }
  });

  it('lets no function update or delete a ledger row, and each read it only as it needs', () => {
    // The sweeper also reads the ledger's stream (the tamper alarm): records, not rows.
    const rows = (k: FunctionKey) => [...actionsOn(s, k, ledger)].filter((a) => !STREAM_READ.includes(a)).sort();
    assert.deepEqual(rows('api'), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query'], 'a reversal reads its row');
    assert.deepEqual(rows('consumer'), ['dynamodb:PutItem'], 'the consumer only appends refunds');
    assert.deepEqual(rows('sweeper'), ['dynamodb:PutItem', 'dynamodb:Query'], 'the audit and deletions query');
  });

  it('grants DeleteItem only on the quotas table (a device unregistered), never batch writes or PartiQL, and Scan only for the daily audit', () => {
    for (const k of KEYS) {
      for (const st of statementsOf(s, k)) {
        for (const a of actionsOf(st)) {
          assert.ok(!/^dynamodb:(BatchWriteItem|PartiQL.*|DeleteTable|UpdateTable)$/.test(a), `${k}: ${a}`);
          if (a === 'dynamodb:DeleteItem') {
            assert.deepEqual(referencedIds(st.Resource), [tableId(s, 'quotas')], `${k}: DeleteItem on quotas only`);
          }
          if (a === 'dynamodb:Scan') {
            assert.equal(k, 'sweeper', `${k}: ${a}`);
            assert.deepEqual(referencedIds(st.Resource), [tableId(s, 'accounts')], 'the audit scans the accounts only');
          }
        }
      }
    }
    assert.ok(actionsOn(s, 'sweeper', tableId(s, 'accounts')).has('dynamodb:Scan'), 'the daily audit reads every account');
  });

  it('authorises the transactions item by item on the tables each function writes', () => {
    // What each transaction's items are (shared/src/store): a grant missing fails in AWS only.
    const need: Record<FunctionKey, Record<string, string[]>> = {
      api: {
        accounts: ['PutItem', 'UpdateItem', 'ConditionCheckItem'],
        jobs: ['PutItem', 'UpdateItem'],
        payments: ['PutItem', 'ConditionCheckItem'],
        signups: ['PutItem', 'ConditionCheckItem'],
      },
      consumer: { accounts: ['UpdateItem'], jobs: ['UpdateItem'], budget: ['PutItem', 'UpdateItem', 'ConditionCheckItem'], attempts: ['PutItem', 'UpdateItem'] },
      sweeper: { accounts: ['UpdateItem'], jobs: ['PutItem', 'UpdateItem'], budget: ['UpdateItem'], attempts: ['UpdateItem'] },
    };
    for (const k of KEYS) {
      for (const [t, writes] of Object.entries(need[k])) {
        const acts = actionsOn(s, k, tableId(s, t));
        for (const w of writes) assert.ok(acts.has(`dynamodb:${w}`), `${k} needs ${w} on ${t}`);
      }
    }
    // Nothing updates a payment record (write-once), nothing but the API creates an account,
    // and the consumer writes no job it did not claim.
    assert.ok(!actionsOn(s, 'api', tableId(s, 'payments')).has('dynamodb:UpdateItem'), 'payments are write-once');
    for (const k of ['consumer', 'sweeper'] as const) assert.ok(!actionsOn(s, k, tableId(s, 'accounts')).has('dynamodb:PutItem'), k);
    assert.ok(!actionsOn(s, 'consumer', tableId(s, 'jobs')).has('dynamodb:PutItem'), 'consumer');
    assert.deepEqual(
      [...actionsOn(s, 'api', tableId(s, 'quotas'))].sort(),
      ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      'the API counts uploads and registers devices',
    );
    assert.deepEqual(
      [...actionsOn(s, 'sweeper', tableId(s, 'quotas'))].sort(),
      ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      'the sweeper lists, reads and removes devices, never adds one',
    );
    assert.equal(actionsOn(s, 'consumer', tableId(s, 'quotas')).size, 0, 'consumer');
    // The user's daily share is a ConditionCheck item in the API's submit and repair
    // transactions (rule 12), authorised on the budget table; the API changes nothing there.
    assert.deepEqual([...actionsOn(s, 'api', tableId(s, 'budget'))], ['dynamodb:ConditionCheckItem'], 'the API only checks the budget');
    assert.equal(actionsOn(s, 'api', tableId(s, 'attempts')).size, 0, 'the API does not touch attempts');
  });

  it('lets Query reach the indexes by name, never index/*, and nothing but Query reach an index', () => {
    for (const k of KEYS) {
      for (const st of statementsOf(s, k)) {
        assert.ok(!JSON.stringify(st.Resource).includes('/index/*'), k);
        if (JSON.stringify(st.Resource).includes('/index/')) assert.deepEqual(actionsOf(st), ['dynamodb:Query'], k);
      }
    }
    const jobsIndexes = statementsOf(s, 'sweeper')
      .filter((st) => referencedIds(st.Resource).includes(tableId(s, 'jobs')))
      .map((st) => JSON.stringify(st.Resource));
    assert.ok(jobsIndexes.some((r) => r.includes('/index/by_sweep')));
  });

  it('keeps the model key away from the API and the sweeper, which reads only the push keys', () => {
    assert.deepEqual([...actionsOn(s, 'consumer', secretId)], ['secretsmanager:GetSecretValue']);
    assert.equal(actionsOn(s, 'api', secretId).size, 0);
    assert.equal(actionsOn(s, 'sweeper', secretId).size, 0);
    const pushId = id(s, s.stack.service.pushKeys);
    for (const st of statementsOf(s, 'sweeper')) {
      for (const a of actionsOf(st)) {
        assert.ok(!a.startsWith('kms:'), `sweeper: ${a}`);
        if (a.startsWith('secretsmanager:')) {
          assert.equal(a, 'secretsmanager:GetSecretValue');
          assert.deepEqual(referencedIds(st.Resource), [pushId], 'the sweeper reads the push keys only');
        }
      }
    }
    for (const k of ['api', 'consumer'] as const) assert.equal(actionsOn(s, k, pushId).size, 0, k);
  });

  it('lets only the API read the Stripe keys, the address key, the Google Play key and the App Store Server API key, and nothing else of Secrets Manager', () => {
    const stripeId = id(s, s.stack.stripeKeys);
    const addressId = id(s, s.stack.addressKey);
    const playId = id(s, s.stack.service.googlePlayKey);
    const appleId = id(s, s.stack.service.appleApiKey);
    for (const secret of [stripeId, addressId, playId, appleId]) {
      assert.deepEqual([...actionsOn(s, 'api', secret)], ['secretsmanager:GetSecretValue']);
      assert.equal(actionsOn(s, 'consumer', secret).size, 0);
      assert.equal(actionsOn(s, 'sweeper', secret).size, 0);
    }
    for (const st of statementsOf(s, 'api')) {
      if (actionsOf(st).some((a) => a.startsWith('secretsmanager:'))) {
        assert.deepEqual(referencedIds(st.Resource).sort(), [stripeId, addressId, playId, appleId].sort());
      }
    }
  });

  it('lets only the API claim an address, by a conditional Put (and a check of its older form) and nothing else', () => {
    assert.deepEqual([...actionsOn(s, 'api', tableId(s, 'signups'))].sort(), ['dynamodb:ConditionCheckItem', 'dynamodb:PutItem']);
    for (const k of ['consumer', 'sweeper'] as const) assert.equal(actionsOn(s, k, tableId(s, 'signups')).size, 0, k);
  });

  it('lets only the API and the sweeper (pending account deletions) delete and list objects, only under uploads/ and results/', () => {
    for (const k of ['api', 'sweeper'] as const) {
      const del = statementsOf(s, k).filter((st) => actionsOf(st).includes('s3:DeleteObject'));
      assert.equal(del.length, 1, k);
      assert.match(JSON.stringify(del[0]!.Resource), /\/uploads\/\*/);
      assert.match(JSON.stringify(del[0]!.Resource), /\/results\/\*/);
      const list = statementsOf(s, k).filter((st) => actionsOf(st).includes('s3:ListBucket'));
      assert.equal(list.length, 1, k);
      assert.deepEqual((list[0] as any).Condition, { StringLike: { 's3:prefix': ['uploads/*', 'results/*'] } });
    }
    for (const st of statementsOf(s, 'consumer')) {
      for (const a of actionsOf(st)) assert.ok(a !== 's3:DeleteObject' && a !== 's3:ListBucket', `consumer: ${a}`);
    }
  });

  it('lets the sweeper read no image: it only lists and deletes a deleted account\'s objects', () => {
    for (const st of statementsOf(s, 'sweeper')) {
      for (const a of actionsOf(st)) {
        if (a.startsWith('s3:')) assert.ok(a === 's3:DeleteObject' || a === 's3:ListBucket', a);
      }
    }
  });

  it('lets the API presign uploads only under uploads/, and the consumer read and write objects', () => {
    const put = statementsOf(s, 'api').filter((st) => actionsOf(st).includes('s3:PutObject'));
    assert.equal(put.length, 1);
    assert.match(JSON.stringify(put[0]!.Resource), /\/uploads\/\*/);
    // Nothing under results/: the consumer copies the inputs an edit keeps for its repairs.
    assert.doesNotMatch(JSON.stringify(put[0]!.Resource), /\/results\//);
    const consumerS3 = actionsOn(s, 'consumer', bucketId);
    assert.deepEqual([...consumerS3].sort(), ['s3:GetObject', 's3:PutObject']);
  });

  it('lets the API and the sweeper ring the doorbell; only the consumer receives', () => {
    const q = id(s, s.stack.queue);
    for (const k of ['api', 'sweeper'] as const) {
      const acts = actionsOn(s, k, q);
      assert.ok(acts.has('sqs:SendMessage'), k);
      assert.ok(!acts.has('sqs:ReceiveMessage') && !acts.has('sqs:DeleteMessage'), k);
    }
    assert.ok(actionsOn(s, 'consumer', q).has('sqs:ReceiveMessage'));
    assert.ok(!actionsOn(s, 'consumer', q).has('sqs:SendMessage'));
  });
});

describe('alarms', () => {
  const s = synth('dev');
  const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);
  const topic = id(s, s.stack.service.alarmTopic);

  it('watch the dead-letter queue, consumer errors, stuck jobs and the budget, and notify', () => {
    const find = (metric: string, namespace: string) => alarms.find((a) => a.MetricName === metric && a.Namespace === namespace);
    const dlq = find('ApproximateNumberOfMessagesVisible', 'AWS/SQS');
    assert.ok(dlq, 'DLQ alarm');
    assert.deepEqual(dlq.Dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [id(s, s.stack.deadLetterQueue), 'QueueName'] } }]);
    assert.equal(dlq.Threshold, 1);
    const errorsOf = (k: FunctionKey) =>
      alarms.find(
        (a) =>
          a.MetricName === 'Errors' &&
          a.Namespace === 'AWS/Lambda' &&
          JSON.stringify(a.Dimensions) === JSON.stringify([{ Name: 'FunctionName', Value: { Ref: functionId(s, k) } }]),
      );
    assert.ok(errorsOf('consumer'), 'consumer Errors alarm');
    const stuck = find(METRICS.jobsStuck, METRICS.namespace);
    assert.deepEqual(stuck?.Dimensions, [{ Name: 'FunctionName', Value: { Ref: functionId(s, 'sweeper') } }]);
    const budget = alarms.filter((a) => a.MetricName === METRICS.budgetUsedPercent && a.Namespace === METRICS.namespace);
    assert.deepEqual(budget.map((a) => a.Threshold), [...BUDGET_ALERT_PERCENTS]);
    for (const a of budget) assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    const webhooks = find(WEBHOOK_ENDPOINTS_DISABLED, METRICS.namespace);
    assert.deepEqual(webhooks?.Dimensions, [{ Name: 'FunctionName', Value: { Ref: functionId(s, 'sweeper') } }]);
    assert.equal(
      alarms.length,
      34,
      'with ModelShutdownNear, ModelUnavailable, SweeperNotRunning, PaymentSignatureInvalid, PurchaseReversals, WebhookOldestUndelivered, a ProviderBreakerOpen per provider and four on refused App Store data and push credentials',
    );
    for (const a of alarms) {
      assert.deepEqual(a.AlarmActions, [{ Ref: topic }]);
      // Silence is normal for every alarm but one: a sweeper that stops running is silent.
      const silenceBreaches = a.MetricName === 'Invocations' && a.ComparisonOperator === 'LessThanThreshold';
      assert.equal(a.TreatMissingData, silenceBreaches ? 'breaching' : 'notBreaching');
    }
  });
});

describe('a provider outage, the API and the queue are seen', () => {
  const s = synth('dev');
  const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);

  it('alarms on jobs failed EDIT_FAILED or CHECK_FAILED (the dimensions the consumer emits) past a threshold in 5 minutes', () => {
    for (const { code, threshold } of OUTAGE_CODES) {
      const a = alarms.find(
        (x) =>
          x.MetricName === METRICS.jobsFinished &&
          x.Namespace === METRICS.namespace &&
          JSON.stringify(x.Dimensions).includes(code),
      );
      assert.ok(a, `${code} alarm`);
      assert.deepEqual(a.Dimensions, [
        { Name: 'FailureCode', Value: code },
        { Name: 'FunctionName', Value: { Ref: functionId(s, 'consumer') } },
        { Name: 'Outcome', Value: 'failed' },
      ]);
      assert.equal(a.Statistic, 'Sum');
      assert.equal(a.Period, 300);
      assert.equal(a.Threshold, threshold);
      assert.match(String(a.AlarmDescription), /provider/);
    }
  });

  it('alarms on API 5xx and p99 latency, every function’s throttles, the api’s errors and the oldest queued message', () => {
    const find = (metric: string, namespace: string) => alarms.filter((a) => a.MetricName === metric && a.Namespace === namespace);
    assert.equal(find('5xx', 'AWS/ApiGateway').length, 1);
    assert.equal(find('Latency', 'AWS/ApiGateway')[0]?.ExtendedStatistic, 'p99');
    assert.equal(find('Throttles', 'AWS/Lambda').length, 3);
    assert.equal(find('Errors', 'AWS/Lambda').length, 3);
    assert.equal(find('ApproximateAgeOfOldestMessage', 'AWS/SQS')[0]?.Threshold, 600);
    for (const a of alarms) assert.ok(String(a.AlarmDescription ?? '').length > 40, `${a.MetricName} tells on-call what to look at`);
  });
});

describe('refunds that fail are seen', () => {
  const s = synth('dev');
  const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);
  const sweeperDims = [{ Name: 'FunctionName', Value: { Ref: functionId(s, 'sweeper') } }];

  it('alarms on the sweeper’s RefundsFailed metric at the first failed refund, telling on-call where to look', () => {
    const a = alarms.find((x) => x.MetricName === METRICS.refundsFailed && x.Namespace === METRICS.namespace);
    assert.ok(a, 'RefundsFailed alarm');
    assert.equal(METRICS.refundsFailed, 'RefundsFailed', 'the name shared/src/adapters/metrics/ emits');
    assert.deepEqual(a.Dimensions, sweeperDims);
    assert.equal(a.Threshold, 1);
    assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.match(String(a.AlarmDescription), /sweep_refund_failed/);
    assert.match(String(a.AlarmDescription), /atelier-admin audit/);
  });

  it('alarms on the sweeper’s own Errors (a sweep whose refunds failed fails its invocation)', () => {
    const a = alarms.find(
      (x) => x.MetricName === 'Errors' && x.Namespace === 'AWS/Lambda' && JSON.stringify(x.Dimensions) === JSON.stringify(sweeperDims),
    );
    assert.ok(a, 'sweeper Errors alarm');
    assert.equal(a.Threshold, 1);
  });

  it('reserves concurrency for each function by a parameter (sweeper 10, consumer 2, API 0; 0 leaves it unreserved)', () => {
    const t = Template.fromJSON(s.json);
    const cases = [
      ['sweeper', 'Sweeper', 10, 10],
      ['consumer', 'Consumer', 2, 50],
      ['api', 'Api', 0, 1000],
    ] as const;
    for (const [k, name, def, max] of cases) {
      t.hasParameter(`${name}ReservedConcurrency`, { Type: 'Number', Default: def, MinValue: 0, MaxValue: max });
      const props = s.json.Resources[functionId(s, k)]!.Properties!;
      assert.deepEqual(props.ReservedConcurrentExecutions, {
        'Fn::If': [`Reserve${name}Concurrency`, { Ref: `${name}ReservedConcurrency` }, { Ref: 'AWS::NoValue' }],
      }, k);
    }
  });
});

describe('environment from one list', () => {
  const s = synth('dev');
  const { names, source } = liveEnvNames();
  const envOf = (k: FunctionKey) =>
    (s.json.Resources[functionId(s, k)]!.Properties!.Environment?.Variables ?? {}) as Record<string, unknown>;

  it(`sets only variables the code reads (${source})`, () => {
    const known = new Set(names.map((n) => n.name));
    for (const k of KEYS) for (const v of Object.keys(envOf(k))) assert.ok(known.has(v), `${k} sets unknown ${v}`);
  });

  it('sets every required variable, the same in every function but the key location', () => {
    for (const n of names.filter((n) => n.required && !PLATFORM_PROVIDED.has(n.name))) {
      for (const k of KEYS) assert.ok(n.name in envOf(k), `${k} lacks ${n.name}`);
    }
    const common = Object.fromEntries(Object.entries(envOf('consumer')).filter(([k]) => !CONSUMER_ONLY_ENV.has(k)));
    const apiCommon = Object.fromEntries(Object.entries(envOf('api')).filter(([k]) => !API_ONLY_ENV.has(k)));
    const sweeperCommon = Object.fromEntries(Object.entries(envOf('sweeper')).filter(([k]) => !SWEEPER_ONLY_ENV.has(k)));
    assert.deepEqual(apiCommon, common);
    assert.deepEqual(sweeperCommon, common);
    assert.ok('ATELIER_PUSH_SECRET_ID' in envOf('sweeper'), 'the sweeper is told where the push keys are');
    assert.equal(envOf('api').ATELIER_PUSH_SECRET_ID, undefined, 'only the sweeper reads the push keys');
    assert.ok('ATELIER_STRIPE_SECRET_ID' in envOf('api'), 'the API is told where the Stripe keys are');
    assert.equal(envOf('consumer').ATELIER_STRIPE_SECRET_ID, undefined, 'only the API reads the Stripe keys');
  });

  it('tells only the consumer where the provider key is, and never puts the key itself anywhere', () => {
    const names = [
      ...loadEnvNames().filter((n) => !n.name.startsWith('ATELIER_MODEL_')),
      { name: 'ATELIER_MODEL_API_KEY_SECRET_ID', required: false, description: 'secret id' },
      { name: 'ATELIER_MODEL_API_KEY', required: false, description: 'the key (local only)' },
    ];
    const app = new App();
    const stack = new AtelierStack(app, 'KeyLocation', { stage: 'dev', placeholderCode: true, envNames: names });
    const t = Template.fromStack(stack).toJSON() as any;
    const secret = stack.getLogicalId(stack.providerKey.node.defaultChild as any);
    const envs = Object.fromEntries(
      (['api', 'consumer', 'sweeper'] as const).map((k) => [
        k,
        t.Resources[stack.getLogicalId(stack.functions[k].node.defaultChild as any)].Properties.Environment.Variables,
      ]),
    );
    assert.deepEqual(envs.consumer.ATELIER_MODEL_API_KEY_SECRET_ID, { Ref: secret });
    assert.equal(envs.api.ATELIER_MODEL_API_KEY_SECRET_ID, undefined);
    assert.equal(envs.sweeper.ATELIER_MODEL_API_KEY_SECRET_ID, undefined);
    for (const k of KEYS) assert.equal(envs[k].ATELIER_MODEL_API_KEY, undefined, k);
  });

  it("points each table's variable at that table, and the queue and bucket at theirs", () => {
    const env = envOf('consumer');
    for (const t of loadSchema()) assert.deepEqual(env[t.env], { Ref: tableId(s, t.logical) }, t.env);
    assert.deepEqual(env.ATELIER_QUEUE_URL, { Ref: id(s, s.stack.queue) });
    assert.deepEqual(env.ATELIER_BUCKET, { Ref: id(s, s.stack.bucket) });
  });

  it('leaves the log variables to Lambda (JSON format, level from the logging config)', () => {
    for (const k of KEYS) for (const p of PLATFORM_PROVIDED) assert.ok(!(p in envOf(k)), `${k} sets ${p}`);
  });

  it('fails the synth when the code requires a variable the infrastructure cannot fill', () => {
    const names = [...loadEnvNames(), { name: 'ATELIER_SOMETHING_NEW', required: true, description: 'a new knob' }];
    assert.throws(() => functionEnvironment(names, {}), /ATELIER_SOMETHING_NEW \(a new knob\)/);
    const app = new App();
    assert.throws(
      () => new AtelierStack(app, 'NewVar', { stage: 'dev', placeholderCode: true, envNames: names }),
      /ATELIER_SOMETHING_NEW/,
    );
  });

  it('sets the daily cap from the DailyCapMicros parameter, because the code reads ATELIER_DAILY_CAP_MICROS', () => {
    assert.ok(
      loadEnvNames().some((n) => n.name === 'ATELIER_DAILY_CAP_MICROS'),
      'env-names.json lists the cap (config::env is the one table)',
    );
    const t = Template.fromJSON(s.json);
    t.hasParameter('DailyCapMicros', { Type: 'Number', Default: 20000000, MinValue: 0 });
    for (const k of ['api', 'consumer', 'sweeper'] as const) {
      assert.deepEqual(envOf(k).ATELIER_DAILY_CAP_MICROS, { Ref: 'DailyCapMicros' }, k);
    }
  });

  it('sets the user share from the UserDailyShareMicros parameter, because the code reads ATELIER_USER_DAILY_SHARE_MICROS', () => {
    assert.ok(loadEnvNames().some((n) => n.name === 'ATELIER_USER_DAILY_SHARE_MICROS'));
    const t = Template.fromJSON(s.json);
    t.hasParameter('UserDailyShareMicros', { Type: 'Number', Default: 3000000, MinValue: 1 });
    for (const k of ['api', 'consumer', 'sweeper'] as const) {
      assert.deepEqual(envOf(k).ATELIER_USER_DAILY_SHARE_MICROS, { Ref: 'UserDailyShareMicros' }, k);
    }
  });

  it('creates a parameter for an anticipated variable only once the code reads it', () => {
    const names = loadEnvNames().filter((n) => n.name !== 'ATELIER_DAILY_CAP_MICROS');
    const app = new App();
    const stack = new AtelierStack(app, 'WithoutCap', { stage: 'dev', placeholderCode: true, envNames: names });
    const t = Template.fromStack(stack);
    assert.equal(t.toJSON().Parameters?.DailyCapMicros, undefined);
    t.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.not(Match.objectLike({ ATELIER_DAILY_CAP_MICROS: Match.anyValue() })) },
    });
  });
});
