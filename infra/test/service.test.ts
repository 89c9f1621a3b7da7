/**
 * `AtelierService` as a team would use it: inside a fresh stack of their own (not
 * `AtelierStack`), with plain values for its settings. And the ready-made stack keeps the
 * logical ids its stateful resources had before the service was a construct of its own.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';

import {
  AtelierService,
  type AtelierServiceProps,
  BUDGET_ALERT_PERCENTS,
  FUNCTIONS,
  type FunctionKey,
  MAX_RECEIVE_COUNT,
  OUTAGE_CODES,
  VERIFICATION_ALARMS,
} from '../lib/atelier-service';
import { loadSchema } from '../lib/schema';
import { WEBHOOK_DELIVERY_CONCURRENCY } from '../lib/webhooks';
import { type CfnTemplate, resourcesOfType, synth } from './helpers';

const KEYS = Object.keys(FUNCTIONS) as FunctionKey[];
const ISSUER = 'https://issuer.example.com/';

/** A team's stack holding the service, with the given settings. */
function teamStack(props: Partial<AtelierServiceProps> = {}, extend?: (service: AtelierService) => void) {
  const app = new App();
  const stack = new Stack(app, 'TeamApp', { env: { account: '123456789012', region: 'eu-west-1' } });
  const service = new AtelierService(stack, 'Photos', { stage: 'prod', placeholderCode: true, site: false, ...props });
  extend?.(service);
  const template = Template.fromStack(stack);
  return { stack, service, template, json: template.toJSON() as CfnTemplate };
}

const logicalId = (stack: Stack, c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as any);

describe('AtelierService in a stack of its own', () => {
  const t = teamStack({
    jwtIssuer: ISSUER,
    jwtAudience: 'photos-web',
    maxInFlight: 5,
    consumerMaxConcurrency: 4,
    sweeperReservedConcurrency: 3,
    apiReservedConcurrency: 7,
    alarmEmail: 'oncall@example.com',
    webOrigins: 'https://photos.example.com',
    dailyCapMicros: 50_000_000,
    resultRetentionDays: 30,
  });

  it('creates one on-demand table per schema table, named nowhere (CloudFormation names them)', () => {
    const schema = loadSchema();
    const tables = resourcesOfType(t.json, 'AWS::DynamoDB::Table');
    assert.equal(tables.length, schema.length);
    for (const def of schema) {
      const table = t.json.Resources[logicalId(t.stack, t.service.tables[def.logical]!)]!;
      assert.equal(table.Properties!.BillingMode, 'PAY_PER_REQUEST', def.logical);
      assert.equal(table.Properties!.TableName, undefined, def.logical);
      assert.equal(table.DeletionPolicy, 'Retain', `${def.logical}: prod keeps data`);
    }
  });

  it('creates the job queue and the webhook delivery queue, each with its dead-letter queue', () => {
    assert.equal(resourcesOfType(t.json, 'AWS::SQS::Queue').length, 4);
    t.template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(t.stack, t.service.deadLetterQueue), 'Arn'] },
        maxReceiveCount: MAX_RECEIVE_COUNT,
      },
    });
    // The delivery queue's mapping: batches of ten, at most 8 at once (one hanging endpoint
    // holds at most 4 sweeper instances; docs/operations.md).
    t.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(t.stack, t.service.webhookQueue), 'Arn'] },
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: WEBHOOK_DELIVERY_CONCURRENCY },
    });
  });

  it('creates the three functions with the settings as their environment', () => {
    const fns = resourcesOfType(t.json, 'AWS::Lambda::Function');
    assert.equal(fns.length, KEYS.length);
    for (const k of KEYS) {
      const env = t.json.Resources[logicalId(t.stack, t.service.functions[k])]!.Properties!.Environment.Variables;
      assert.equal(env.ATELIER_MAX_IN_FLIGHT, '5', k);
      assert.equal(env.ATELIER_DAILY_CAP_MICROS, '50000000', k);
      assert.equal(env.ATELIER_RESULT_RETENTION_DAYS, '30', k);
      assert.deepEqual(env.ATELIER_QUEUE_URL, { Ref: logicalId(t.stack, t.service.queue) }, k);
    }
    t.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { ScalingConfig: { MaximumConcurrency: 4 } });
    const reserved = (k: (typeof KEYS)[number]) =>
      t.json.Resources[logicalId(t.stack, t.service.functions[k])]!.Properties!.ReservedConcurrentExecutions;
    assert.equal(reserved('sweeper'), 3);
    assert.equal(reserved('consumer'), 4, 'the consumer reserves what its event source may run');
    assert.equal(reserved('api'), 7);
  });

  it('creates the HTTP API authorised by the given issuer and audience', () => {
    assert.equal(resourcesOfType(t.json, 'AWS::ApiGatewayV2::Api').length, 1);
    const [[, authorizer]] = resourcesOfType(t.json, 'AWS::ApiGatewayV2::Authorizer') as [[string, any]];
    assert.deepEqual(authorizer.Properties.JwtConfiguration, { Issuer: ISSUER, Audience: ['photos-web'] });
    // Decided at synth: no user pool, client or domain, not even under a false condition.
    for (const type of ['AWS::Cognito::UserPool', 'AWS::Cognito::UserPoolClient', 'AWS::Cognito::UserPoolDomain']) {
      assert.equal(resourcesOfType(t.json, type).length, 0, type);
    }
    assert.equal(t.service.userPool, undefined);
    assert.ok(t.service.apiUrl.length > 0);
    assert.equal(t.service.apiFront, undefined, 'no per-IP front unless asked');
  });

  it('allows the given web origins (CORS of the API and the bucket)', () => {
    const api = resourcesOfType(t.json, 'AWS::ApiGatewayV2::Api')[0]![1].Properties!;
    assert.ok(JSON.stringify(api.CorsConfiguration.AllowOrigins).includes('https://photos.example.com'));
  });

  it('creates the alarms, each notifying the topic, with the e-mail subscribed', () => {
    const alarms = resourcesOfType(t.json, 'AWS::CloudWatch::Alarm');
    const expected =
      ['DeadLetterQueueNotEmpty', 'ConsumerErrors', 'JobsStuck', 'RefundsFailed', 'SweeperErrors', 'ApiServerErrors'].length +
      ['ApiLatency', 'ApiErrors', 'OldestQueuedJob'].length +
      KEYS.length /* throttles */ +
      BUDGET_ALERT_PERCENTS.length +
      OUTAGE_CODES.length +
      ['LedgerRowModified', 'LedgerRowRemoved', 'AuditOffenders', 'DeliveryTimeP95'].length /* ledger-guard.ts */ +
      ['WebhookEndpointDisabled', 'WebhookOldestUndelivered'].length /* webhooks.ts */ +
      ['ModelShutdownNear', 'ModelUnavailable'].length /* models.ts */ +
      ['ProviderBreakerOpenOpenai', 'ProviderBreakerOpenGemini'].length /* models.ts, one per provider */ +
      ['SweeperNotRunning', 'PaymentSignatureInvalid', 'PurchaseReversals'].length +
      VERIFICATION_ALARMS.length /* App Store data and push credentials refused */;
    assert.equal(alarms.length, expected);
    const topic = logicalId(t.stack, t.service.alarmTopic);
    for (const [name, a] of alarms) assert.deepEqual(a.Properties!.AlarmActions, [{ Ref: topic }], name);
    t.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
    for (const pct of BUDGET_ALERT_PERCENTS) {
      t.template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'BudgetUsedPercent', Threshold: pct });
    }
  });

  it('adds alarms of your own to the same topic', () => {
    let alarm: cloudwatch.Alarm | undefined;
    const own = teamStack({}, (service) => {
      alarm = service.addAlarm('QueueDeep', {
        metric: service.queue.metricApproximateNumberOfMessagesVisible(),
        threshold: 100,
        evaluationPeriods: 1,
      });
    });
    assert.deepEqual(own.json.Resources[logicalId(own.stack, alarm!)]!.Properties!.AlarmActions, [
      { Ref: logicalId(own.stack, own.service.alarmTopic) },
    ]);
  });

  it('decides plain settings at synth: the template has no conditions', () => {
    assert.equal(t.json.Conditions, undefined);
    assert.equal(t.service.useCognito, undefined);
  });

  it('makes no stack outputs and no parameters: those are the app’s to choose', () => {
    assert.equal(Object.keys(t.json.Outputs ?? {}).length, 0);
    assert.equal(Object.keys(t.json.Parameters ?? {}).filter((p) => p !== 'BootstrapVersion').length, 0);
  });

  it('creates a Cognito user pool when no issuer is given', () => {
    const c = teamStack({ authDomainPrefix: 'photos-auth' });
    assert.equal(resourcesOfType(c.json, 'AWS::Cognito::UserPool').length, 1);
    c.template.hasResourceProperties('AWS::Cognito::UserPoolDomain', { Domain: 'photos-auth' });
    const pool = logicalId(c.stack, c.service.userPool!);
    assert.equal(c.json.Resources[pool]!.Condition, undefined, 'created unconditionally');
    const [[, authorizer]] = resourcesOfType(c.json, 'AWS::ApiGatewayV2::Authorizer') as [[string, any]];
    assert.ok(JSON.stringify(authorizer.Properties.JwtConfiguration.Issuer).includes(pool), 'the pool issues the tokens');
    assert.deepEqual(authorizer.Properties.JwtConfiguration.Audience, [{ Ref: logicalId(c.stack, c.service.userPoolClient!) }]);
    // No e-mail given: no subscription. The default sweeper reservation: set directly.
    assert.equal(resourcesOfType(c.json, 'AWS::SNS::Subscription').length, 0);
    const sweeper = c.json.Resources[logicalId(c.stack, c.service.functions.sweeper)]!.Properties!;
    assert.equal(sweeper.ReservedConcurrentExecutions, 10, 'the webhook deliveries’ 8 and 2 for sweeps and streams');
    const consumer = c.json.Resources[logicalId(c.stack, c.service.functions.consumer)]!.Properties!;
    assert.equal(consumer.ReservedConcurrentExecutions, 2, 'the default: the default maximum concurrency');
    const api = c.json.Resources[logicalId(c.stack, c.service.functions.api)]!.Properties!;
    assert.equal(api.ReservedConcurrentExecutions, undefined, 'the API reserves nothing by default');
  });

  it('takes each function’s code from `code` instead of the packaged zips', () => {
    const code = lambda.Code.fromAsset(join(__dirname, '..', 'assets', 'placeholder'));
    const c = teamStack({
      placeholderCode: false,
      distDir: '/nonexistent/lambda-dist',
      code: { api: code, consumer: code, sweeper: code },
    });
    assert.equal(resourcesOfType(c.json, 'AWS::Lambda::Function').length, KEYS.length);
  });

  it('fits twice into one stack (two ids, two hosted UI prefixes)', () => {
    const app = new App();
    const stack = new Stack(app, 'TwoServices');
    new AtelierService(stack, 'Blue', { stage: 'dev', placeholderCode: true, site: false, authDomainPrefix: 'blue-auth' });
    new AtelierService(stack, 'Green', { stage: 'dev', placeholderCode: true, site: false, authDomainPrefix: 'green-auth' });
    const json = Template.fromStack(stack).toJSON() as CfnTemplate;
    assert.equal(resourcesOfType(json, 'AWS::DynamoDB::Table').length, 2 * loadSchema().length);
    assert.equal(resourcesOfType(json, 'AWS::Lambda::Function').length, 2 * KEYS.length);
  });
});

describe('AtelierService sells packs in the App Store when configured', () => {
  it('sets the App Store settings and the product ids of the packs, and nothing App Store without them', () => {
    const apple = teamStack({
      jwtIssuer: ISSUER,
      jwtAudience: 'photos-app',
      creditPacks: [{ name: 'starter', credits: 50, amount: 500, currency: 'usd', appStoreProductId: 'com.example.starter' }],
      appleRootCerts: 'MIIB',
      appleBundleId: 'com.example.photos',
      appleEnvironment: 'Sandbox',
      appleAppAppleId: 1234567890,
    });
    const plain = teamStack({ jwtIssuer: ISSUER, jwtAudience: 'photos-app' });
    const envOf = (t: ReturnType<typeof teamStack>) =>
      t.json.Resources[logicalId(t.stack, t.service.functions.api)]!.Properties!.Environment.Variables;

    const env = envOf(apple);
    assert.equal(env.ATELIER_CREDIT_PACKS, 'starter:50:500:usd:com.example.starter');
    assert.equal(env.ATELIER_APPLE_ROOT_CERTS, 'MIIB');
    assert.equal(env.ATELIER_APPLE_BUNDLE_ID, 'com.example.photos');
    assert.equal(env.ATELIER_APPLE_ENVIRONMENT, 'Sandbox');
    assert.equal(env.ATELIER_APPLE_APP_APPLE_ID, '1234567890');
    assert.deepEqual(
      Object.keys(envOf(plain)).filter((k) => k.startsWith('ATELIER_APPLE_') && k !== 'ATELIER_APPLE_API_SECRET_ID'),
      [],
    );
  });
});

describe('AtelierService sells packs in Google Play when configured', () => {
  it('sets the Google Play settings and product ids, tells only the API where the key is, and nothing Google Play without them', () => {
    const play = teamStack({
      jwtIssuer: ISSUER,
      jwtAudience: 'photos-app',
      creditPacks: [
        { name: 'starter', credits: 50, amount: 500, currency: 'usd', googlePlayProductId: 'starter_pack' },
        { name: 'studio', credits: 250, amount: 2000, currency: 'usd', appStoreProductId: 'com.example.studio', googlePlayProductId: 'studio_pack' },
      ],
      googlePlayPackageName: 'com.example.photos',
      googlePlayPushAudience: 'https://api.example.com/v1/webhooks/google',
      googlePlayPushServiceAccount: 'rtdn@example.iam.gserviceaccount.com',
    });
    const plain = teamStack({ jwtIssuer: ISSUER, jwtAudience: 'photos-app' });
    const envOf = (t: ReturnType<typeof teamStack>, key: 'api' | 'consumer' | 'sweeper') =>
      t.json.Resources[logicalId(t.stack, t.service.functions[key])]!.Properties!.Environment.Variables;

    const env = envOf(play, 'api');
    assert.equal(env.ATELIER_CREDIT_PACKS, 'starter:50:500:usd::starter_pack,studio:250:2000:usd:com.example.studio:studio_pack');
    assert.equal(env.ATELIER_GOOGLE_PLAY_PACKAGE_NAME, 'com.example.photos');
    assert.equal(env.ATELIER_GOOGLE_PLAY_PUSH_AUDIENCE, 'https://api.example.com/v1/webhooks/google');
    assert.equal(env.ATELIER_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT, 'rtdn@example.iam.gserviceaccount.com');
    assert.ok(env.ATELIER_GOOGLE_PLAY_SECRET_ID, 'the API is told where the key is');
    assert.ok(env.ATELIER_APPLE_API_SECRET_ID, 'the API is told where the App Store Server API key is');
    for (const key of ['consumer', 'sweeper'] as const) {
      assert.equal(envOf(play, key).ATELIER_GOOGLE_PLAY_SECRET_ID, undefined, key);
      assert.equal(envOf(play, key).ATELIER_APPLE_API_SECRET_ID, undefined, key);
    }
    assert.deepEqual(
      Object.keys(envOf(plain, 'api')).filter((k) => k.startsWith('ATELIER_GOOGLE_PLAY_') && k !== 'ATELIER_GOOGLE_PLAY_SECRET_ID'),
      [],
    );
  });
});

describe('AtelierService refuses bad settings at synth, naming them', () => {
  const cases: [string, Partial<AtelierServiceProps>, RegExp][] = [
    ['an issuer without an audience', { jwtIssuer: ISSUER }, /jwtAudience is required/],
    ['an issuer over plain http to a remote host', { jwtIssuer: 'http://issuer.example.com/', jwtAudience: 'a' }, /jwtIssuer/],
    ['no in-flight edits', { maxInFlight: 0 }, /maxInFlight must be an integer in 1\.\.100, not 0/],
    ['a fractional retention', { resultRetentionDays: 1.5 }, /resultRetentionDays/],
    ['one consumer (AWS minimum is 2)', { consumerMaxConcurrency: 1 }, /consumerMaxConcurrency/],
    ['a consumer reservation below its event source', { consumerMaxConcurrency: 4, consumerReservedConcurrency: 3 }, /consumerReservedConcurrency \(3\) must be 0 or at least consumerMaxConcurrency \(4\)/],
    ['an API reservation past the range', { apiReservedConcurrency: 1001 }, /apiReservedConcurrency must be an integer in 0\.\.1000/],
    ['a malformed e-mail', { alarmEmail: 'oncall at example.com' }, /alarmEmail/],
    ['a wildcard origin', { webOrigins: '*' }, /webOrigins/],
    ['an origin with a path', { webOrigins: 'https://a.example.com/app' }, /webOrigins/],
    ['a malformed credit pack', { creditPacks: 'starter:fifty:500:usd' }, /creditPacks/],
    ['a model URL that is not a URL', { modelBaseUrl: 'api.openai.com' }, /modelBaseUrl/],
  ];
  for (const [what, props, error] of cases) {
    it(`refuses ${what}`, () => assert.throws(() => teamStack(props), error));
  }
});

describe('AtelierStack keeps its logical ids', () => {
  // Recorded from the stack before the service became a construct (commit 0d2ae36): a changed
  // id of a stateful resource would make CloudFormation replace it (a new, empty table).
  const STATEFUL = {
    AccountsTable81C15AE5: 'AWS::DynamoDB::Table',
    AttemptsTable3B1DC079: 'AWS::DynamoDB::Table',
    BudgetTableB1D6C543: 'AWS::DynamoDB::Table',
    JobsTable1970BC16: 'AWS::DynamoDB::Table',
    LedgerTable38A58B60: 'AWS::DynamoDB::Table',
    PaymentsTable48A42630: 'AWS::DynamoDB::Table',
    QuotasTableEBB5AA89: 'AWS::DynamoDB::Table',
    SignupsTableD3DD58CC: 'AWS::DynamoDB::Table',
    Assets9A31D427: 'AWS::S3::Bucket',
    WebBucketE51352C0: 'AWS::S3::Bucket',
    JobsQueue86ED6666: 'AWS::SQS::Queue',
    JobsDeadLetterQueueE6E1CCE2: 'AWS::SQS::Queue',
    ModelProviderKey3B14A585: 'AWS::SecretsManager::Secret',
    GeminiProviderKeyCAE63FCE: 'AWS::SecretsManager::Secret',
    StripeKeys92D3CFAD: 'AWS::SecretsManager::Secret',
    AddressKey1F8FD90D: 'AWS::SecretsManager::Secret',
    Users0A0EEA89: 'AWS::Cognito::UserPool',
  } as const;

  it('for every table, bucket, queue, secret and the user pool', () => {
    const s = synth('prod');
    for (const [logical, type] of Object.entries(STATEFUL)) {
      assert.equal(s.json.Resources[logical]?.Type, type, logical);
    }
  });

  it('and names no resource after the service construct', () => {
    const s = synth('dev');
    assert.equal(s.stack.service.node.id, 'Default');
    for (const logical of Object.keys(s.json.Resources)) assert.ok(!logical.startsWith('Default'), logical);
  });
});
