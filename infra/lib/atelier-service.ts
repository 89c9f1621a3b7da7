/**
 * Atelier on AWS as one reusable construct: three Lambda functions (API, consumer, sweeper), the
 * DynamoDB tables of the code's schema, the job queue and its dead-letter queue, the private
 * assets bucket, the model provider key, a JWT-authorised HTTP API, a one-minute sweep, and the
 * alarms that watch money. `AtelierStack` (atelier-stack.ts) is the ready-made deployment that
 * instantiates it with its CloudFormation parameters; a team's own CDK app instantiates it with
 * plain values (infra/README.md: "Atelier in your own CDK app").
 *
 * Least privilege is written out per function and table in `terraform/data-grants.json`
 * (no `grant*ReadWriteData` helpers: they include DeleteItem and BatchWriteItem). The ledger
 * is append-only: no role gets UpdateItem or DeleteItem on it.
 */
import { METRIC_NAMESPACE, metricName, metricValue } from './metrics';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  Aws,
  CfnCondition,
  CfnResource,
  CfnRule,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  Tags,
  Token,
  Tokenization,
  Validations,
} from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { allowSend, consume } from './queues';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { type EnvName, type EnvValues, functionEnvironment, loadEnvNames } from './environment';
import { addDashboard } from './dashboard';
import { addLedgerGuard } from './ledger-guard';
import { loadCors } from './cors';
import { LOGICAL_TABLE_METADATA, type TableDef, loadSchema } from './schema';
import { WebSite } from './web-site';
import { addWebhooks } from './webhooks';
import { type ModelCatalogue, addModelAlarms, checkModel, loadModels, utcToday } from './models';

export type Stage = 'dev' | 'prod';
export type Arch = 'x86_64' | 'arm64';

/** The three functions: package name = binary name = folder under the dist directory. */
export const FUNCTIONS = {
  api: 'atelier-api',
  consumer: 'atelier-consumer',
  sweeper: 'atelier-sweeper',
} as const;
export type FunctionKey = keyof typeof FUNCTIONS;

/**
 * The consumer's timeout. The queue's visibility timeout is six times this (AWS's advice for
 * SQS event sources), and the sweeper's stuck threshold must exceed it (docs/design.md rule 6).
 */
export const CONSUMER_TIMEOUT = Duration.minutes(5);
export const QUEUE_VISIBILITY = Duration.seconds(CONSUMER_TIMEOUT.toSeconds() * 6);
/** docs/design.md rule 6: `processing` for 15 minutes is stuck. */
export const STUCK_AFTER = Duration.minutes(15);
/** Deliveries of one message before it goes to the dead-letter queue. */
export const MAX_RECEIVE_COUNT = 5;

/** Custom metrics the code emits (see infra/README.md: "Metrics the code must emit"). */
export const METRICS = {
  namespace: METRIC_NAMESPACE,
  /** Sweeper, every sweep: jobs it found stuck in `processing` (and failed + refunded). */
  jobsStuck: metricName('jobsStuck'),
  /** Consumer, after each reservation/settlement: the UTC day's spend as a percent of the cap. */
  budgetUsedPercent: metricName('budgetUsedPercent'),
  /** Sweeper, every sweep: refunds it owed (dispatch limit, stuck job) and could not make. */
  refundsFailed: metricName('refundsFailed'),
  /** Every finished job, by `Outcome` and `FailureCode` (consumer, sweeper, API cancels). */
  jobsFinished: metricName('jobsFinished'),
} as const;

/**
 * Failure codes whose count in 5 minutes means a provider outage (the consumer acknowledges
 * business failures, so nothing else fails): jobs failed with the code, and the threshold.
 */
export const OUTAGE_CODES = [
  { code: 'EDIT_FAILED', threshold: 5 },
  { code: 'CHECK_FAILED', threshold: 5 },
] as const;

/** Budget alerts: `used + reserved` as a percent of the day's cap. */
export const BUDGET_ALERT_PERCENTS = [50, 80, 95] as const;

/** Purchases reversed (refunds, disputes) within an hour that page: a burst is usually stolen cards. */
export const REVERSALS_ALARM_PER_HOUR = 5;

/**
 * Alarms on `VerificationFailures` (one per `Source`, in 5 minutes): App Store signed data the
 * api refused, and push credentials a push service refused the sweeper. Any caller can post a
 * transaction or a notification, so those fire on a run; nobody else holds our push
 * credentials, so one refusal is enough.
 */
export const VERIFICATION_ALARMS = [
  {
    id: 'AppStoreTransactionsRefused',
    source: 'verificationAppStoreTransaction',
    fn: 'api',
    threshold: 10,
    description:
      'Signed App Store transactions posted by the iOS app (POST /v1/purchases/apple) were refused as not Apple\'s data for ' +
      'this app: if ours is wrong (bundle id, app Apple id, root certificates, environment), no iPhone purchase is granted. ' +
      'The api logs app_store_purchase_refused say why; check ATELIER_APPLE_ROOT_CERTS, the bundle id and the environment. ' +
      'A few from one user_id is someone posting junk: nothing was written.',
  },
  {
    id: 'AppStoreNotificationsRefused',
    source: 'verificationAppStoreNotification',
    fn: 'api',
    threshold: 3,
    description:
      'App Store Server Notifications (POST /v1/webhooks/apple) failed verification: refunds and revocations are not taken ' +
      'back while ours is wrong. The api logs app_store_notification_refused say why; check ATELIER_APPLE_ROOT_CERTS, the ' +
      'bundle id and the environment; Apple retries for days, so fixing it applies what was refused.',
  },
  {
    id: 'PushCredentialsRefusedApns',
    source: 'verificationApns',
    fn: 'sweeper',
    threshold: 1,
    description:
      'APNs refused our provider token (403): no iPhone gets a push. The sweeper logs push_attempt (answer ' +
      'CredentialsRefused) and the key in the push secret: a revoked .p8 key, or a wrong key_id, team_id or topic. Store a ' +
      'valid key with put-secret-value; refused pushes are retried on the webhook schedule after the next cold start.',
  },
  {
    id: 'PushCredentialsRefusedFcm',
    source: 'verificationFcm',
    fn: 'sweeper',
    threshold: 1,
    description:
      'FCM (401/403) or Google\'s token endpoint refused our service account: no Android phone gets a push. The sweeper ' +
      'logs push_attempt (answer CredentialsRefused, or the token endpoint\'s status in error): a deleted key, a wrong ' +
      'client_email or project_id, or the account lacking the Firebase Cloud Messaging permission. Store a valid key with ' +
      'put-secret-value; refused pushes are retried on the webhook schedule after the next cold start.',
  },
] as const;

/**
 * Concurrency reserved for the sweeper (parameter `SweeperReservedConcurrency`): the function
 * that guarantees refunds is never throttled by API or consumer load, and that delivers
 * webhooks. The webhook delivery queue's event source may take `WEBHOOK_DELIVERY_CONCURRENCY`
 * (8) of it; the other two cover a sweep running long while the next minute's starts, and the
 * streams' batches (ledger guard, webhook fan-out). See docs/operations.md (webhook delivery
 * concurrency).
 */
export const SWEEPER_RESERVED_CONCURRENCY = 10;

/**
 * Concurrency reserved for the consumer (parameter `ConsumerReservedConcurrency`): API load
 * (long-polls included, each holding an API instance up to 20 s) can never take the instances
 * that run paid jobs. At least the event source's maximum concurrency, or the queue's poller
 * is throttled; 0: none. The default: the default maximum concurrency.
 */
export const CONSUMER_RESERVED_CONCURRENCY = 2;

/** Defaults of the settings; the ready-made stack's parameters default to the same values. */
export const DEFAULTS = {
  consumerMaxConcurrency: 2,
  maxInFlight: 3,
  sweeperReservedConcurrency: SWEEPER_RESERVED_CONCURRENCY,
  consumerReservedConcurrency: CONSUMER_RESERVED_CONCURRENCY,
  apiReservedConcurrency: 0,
  uploadRetentionDays: 7,
  resultRetentionDays: 90,
  modelBaseUrl: 'https://api.openai.com',
  editProviders: 'openai',
  visionProviders: 'openai',
  geminiBaseUrl: 'https://generativelanguage.googleapis.com',
  dailyCapMicros: 20_000_000,
  userDailyShareMicros: 3_000_000,
  uploadSlotsPerDay: 150,
  uploadBytesPerDay: 1_073_741_824,
  requestsPerWindow: 100,
  requestWindowSecs: 10,
  emailVerifiedClaim: 'email_verified',
  creditPacks: 'starter:50:500:usd,studio:250:2000:usd',
  checkoutReturnUrls: 'http://localhost:8787/',
  unboundStorePurchases: 'refuse',
  // Sized for everyone together (docs/operations.md "The stage throttle"): each caller has its
  // own budget in the code; this is the ceiling the tables and functions carry.
  throttle: { rateLimit: 1000, burstLimit: 2000 },
  /** The production deployment's per-IP limit (requests per IP in any 5 minutes): the CDK
   * app's `prod` stage sets it unless told `off`; the construct itself adds no front. */
  perIpRateLimitProd: 10_000,
} as const;

/**
 * Allowed ranges of the integer settings (inclusive; no `max`: unbounded). The stack's
 * parameters carry them as MinValue/MaxValue; the construct checks a concrete value against them.
 */
export const RANGES = {
  consumerMaxConcurrency: { min: 2, max: 50 },
  maxInFlight: { min: 1, max: 100 },
  sweeperReservedConcurrency: { min: 0, max: 10 },
  consumerReservedConcurrency: { min: 0, max: 50 },
  apiReservedConcurrency: { min: 0, max: 1000 },
  uploadRetentionDays: { min: 1, max: 3650 },
  resultRetentionDays: { min: 1, max: 3650 },
  dailyCapMicros: { min: 0 },
  userDailyShareMicros: { min: 1 },
  uploadSlotsPerDay: { min: 1, max: 1_000_000 },
  uploadBytesPerDay: { min: 20_971_520 },
  requestsPerWindow: { min: 1, max: 1_000_000 },
  requestWindowSecs: { min: 1, max: 3600 },
} as const satisfies Record<string, { min: number; max?: number }>;
type IntSetting = keyof typeof RANGES;

/**
 * What an Atelier deployment is made of. Every setting is optional except `stage`; a value may
 * be a plain value or a token (the ready-made `AtelierStack` passes its CloudFormation
 * parameters). Plain values are checked when the construct is built (a bad one fails the synth
 * with the setting's name); tokens are checked by whatever resolves them (the stack's
 * parameters carry the same patterns and ranges).
 */
/** A credit pack for sale; `amount` in the currency's minor unit (cents). */
export interface CreditPack {
  readonly name: string;
  readonly credits: number;
  readonly amount: number;
  /** ISO 4217, e.g. `usd`. */
  readonly currency: string;
  /** The App Store consumable that sells this pack in the iOS app (`POST /v1/purchases/apple`). */
  readonly appStoreProductId?: string;
  /** The Google Play one-time product that sells this pack in the Android app (`POST /v1/purchases/google`). */
  readonly googlePlayProductId?: string;
}

/**
 * Packs as the code reads them (`ATELIER_CREDIT_PACKS`):
 * `NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID[:GOOGLE_PLAY_PRODUCT_ID]],...` (the App
 * Store field empty when only Google Play sells the pack).
 */
export function packsText(packs: string | readonly CreditPack[] | undefined): string | undefined {
  if (packs === undefined || typeof packs === 'string') return packs;
  return packs
    .map((p) => {
      const google = p.googlePlayProductId ? `:${p.googlePlayProductId}` : '';
      const product = p.appStoreProductId || google ? `:${p.appStoreProductId ?? ''}${google}` : '';
      return `${p.name}:${p.credits}:${p.amount}:${p.currency}${product}`;
    })
    .join(',');
}

/** A list as the code reads it (comma-separated); a string (or a parameter's token) as is. */
export function commaJoined(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return value.join(',');
}

export interface AtelierServiceProps {
  /**
   * `prod`: deletion protection on the tables and the user pool, data retained when the
   * stack is deleted, logs kept three months (else two weeks). Also the `stage` tag, part of the
   * Cognito domain prefix and of the API's and alarm topic's descriptions.
   */
  readonly stage: Stage;
  /** Lambda architecture; must match `cargo xtask package --arch`. @default x86_64 */
  readonly arch?: Arch;
  /**
   * Folder holding `<function>/bootstrap.zip` for `arch` (what `cargo xtask package`
   * writes). Ignored when `placeholderCode` is set or `code` gives a function's code. The
   * construct never guesses a path: without `code`, `distDir` or `placeholderCode` it refuses.
   */
  readonly distDir?: string;
  /**
   * The functions' code, by function, overriding `distDir` (for example
   * `lambda.Code.fromBucket(...)` for zips a pipeline published). @default the zips in `distDir`
   */
  readonly code?: Partial<Record<FunctionKey, lambda.Code>>;
  /**
   * Deploy a placeholder instead of the zips (tests and offline synth run without a 9-minute
   * release build). Never deploy this: every function would answer with an error.
   * @default false
   */
  readonly placeholderCode?: boolean;
  /** The tables. @default infra/schema.json (`atelier-admin schema`) */
  readonly schema?: TableDef[];
  /** The environment variables the code reads. @default infra/env-names.json (`atelier-admin env-names`) */
  readonly envNames?: EnvName[];
  /**
   * OIDC issuer URL of the bearer tokens (https, or http on the loopback for the local cloud).
   * Empty or absent: a Cognito user pool created here (with its app client and hosted UI).
   * @default '' (Cognito)
   */
  readonly jwtIssuer?: string;
  /** Audience (`aud` or `client_id` claim) the tokens must carry; required with `jwtIssuer`. @default '' (the Cognito app client) */
  readonly jwtAudience?: string;
  /**
   * Prefix of the Cognito hosted UI domain (`<prefix>.auth.<region>.amazoncognito.com`),
   * globally unique. @default atelier-<stage>-<account id>
   */
  readonly authDomainPrefix?: string;
  /** Most consumer instances at once (SQS event source maximum concurrency), 2..50. @default 2 */
  readonly consumerMaxConcurrency?: number;
  /** Edits one user may have queued or processing at once, 1..100. @default 3 */
  readonly maxInFlight?: number;
  /**
   * Concurrency reserved for the sweeper, so API load cannot throttle refunds, 0..10. 0: none
   * (only for accounts whose concurrency limit is 10, where AWS refuses any reservation).
   * @default 2
   */
  readonly sweeperReservedConcurrency?: number;
  /**
   * Concurrency reserved for the consumer, so API load (long-polls included) cannot throttle
   * paid jobs, 0..50; 0 or at least `consumerMaxConcurrency`. 0: none (accounts whose
   * concurrency limit is 10). @default consumerMaxConcurrency
   */
  readonly consumerReservedConcurrency?: number;
  /**
   * Concurrency reserved for, and the most instances of, the API, 0..1000. 0: none (the API
   * shares the account's unreserved pool, bounded by stage throttling). @default 0
   */
  readonly apiReservedConcurrency?: number;
  /** E-mail address subscribed to the alarm topic. @default '' (none; subscribe to `alarmTopic` yourself) */
  readonly alarmEmail?: string;
  /**
   * Days before an object under `uploads/` expires. An upload is only needed until an edit is
   * submitted: the submit copies it into the edit's own prefix under `results/` (kept as long
   * as the result, so repairs never need the upload). @default 7
   */
  readonly uploadRetentionDays?: number;
  /**
   * Days before an object under `results/` (delivered images, repair candidates, the inputs each
   * edit keeps) expires, 1..3650; the functions read the same value, so a job whose images
   * expired says so. @default 90
   */
  readonly resultRetentionDays?: number;
  /** Base URL of the OpenAI-compatible model API. @default https://api.openai.com */
  readonly modelBaseUrl?: string;
  /**
   * Providers of the edit in failover order, comma-separated, of `openai` and `gemini`: the
   * first serves; the next only after a definite failure (docs/design.md rule 15). @default openai
   */
  readonly editProviders?: string;
  /** Providers of the vision calls in failover order (as editProviders). @default openai */
  readonly visionProviders?: string;
  /** Base URL of the Gemini API. @default https://generativelanguage.googleapis.com */
  readonly geminiBaseUrl?: string;
  /**
   * The edit model: an edit row of infra/models.json not past its shutdown (the synth fails
   * otherwise). @default the catalogue's default (gpt-image-2.5-sunburst)
   */
  readonly imageModel?: string;
  /**
   * The vision model (readiness check, review, comparison): a vision row of infra/models.json
   * not past its shutdown. @default the catalogue's default (gpt-5.4-mini)
   */
  readonly visionModel?: string;
  /** The day (`YYYY-MM-DD`, UTC) the model settings are checked against. @default today */
  readonly modelCheckDate?: string;
  /** The model catalogue. @default infra/models.json */
  readonly models?: ModelCatalogue;
  /**
   * Default daily model spend cap in micro-dollars for days the operator has not capped
   * (`atelier-admin budget set-cap` overrides it); 0 refuses every paid call. @default 20000000 (20 USD)
   */
  readonly dailyCapMicros?: number;
  /**
   * Model spend one user may cause in a UTC day, in micro-dollars; past it their submits are
   * refused (429 DAILY_LIMIT_REACHED). @default 3000000 (3 USD)
   */
  readonly userDailyShareMicros?: number;
  /** Upload slots one user may ask for per UTC day, 1..1000000. @default 150 */
  readonly uploadSlotsPerDay?: number;
  /** Declared bytes of uploads one user may ask for per UTC day, at least 20 MiB. @default 1 GiB */
  readonly uploadBytesPerDay?: number;
  /**
   * API requests one signed-in caller may make per window, counted across every execution
   * environment; past it 429 TOO_MANY_REQUESTS, 1..1000000. @default 100
   */
  readonly requestsPerWindow?: number;
  /** The length of that window in seconds, 1..3600. @default 10 */
  readonly requestWindowSecs?: number;
  /** Token claim saying the e-mail is verified; only such callers get the signup grant. @default email_verified */
  readonly emailVerifiedClaim?: string;
  /**
   * Credit packs for sale: `NAME:CREDITS:AMOUNT:CURRENCY`, comma-separated, the amount in minor
   * units. @default starter:50:500:usd,studio:250:2000:usd
   */
  readonly creditPacks?: string | readonly CreditPack[];
  /**
   * URL prefixes a checkout's success and cancel URLs must start with, comma-separated (the
   * first is the default): your web app's origin with a slash. @default http://localhost:8787/
   */
  readonly checkoutReturnUrls?: string | readonly string[];
  /**
   * App Store purchases (`POST /v1/purchases/apple`, `/v1/webhooks/apple`): the trusted root
   * certificates of Apple's signed data (Apple Root CA - G3), PEM or base64 DER, comma-separated.
   * Set with `appleBundleId` to enable them. @default none (App Store purchases off)
   */
  readonly appleRootCerts?: string;
  /** The iOS app's bundle id that App Store data must name. @default none */
  readonly appleBundleId?: string;
  /** `Production` or `Sandbox`: the App Store whose data is accepted. @default Production */
  readonly appleEnvironment?: 'Production' | 'Sandbox';
  /** The app's numeric Apple id, checked on production notifications. @default not checked */
  readonly appleAppAppleId?: number;
  /**
   * Google Play purchases (`POST /v1/purchases/google`, `/v1/webhooks/google`): the Android
   * app's package name. Set with the two push settings below, then store the service account's
   * JSON key in `GooglePlayKeySecretArn` to enable them. @default none (Google Play off)
   */
  readonly googlePlayPackageName?: string;
  /** The Real-time Developer Notifications push subscription's audience (its OIDC token's `aud`). @default none */
  readonly googlePlayPushAudience?: string;
  /** The service account e-mail the push subscription signs its OIDC tokens as. @default none */
  readonly googlePlayPushServiceAccount?: string;
  /**
   * `refuse`: an App Store or Google Play purchase bought without the account's
   * `app_account_token` is refused (`403 PURCHASE_NOT_BOUND`), since whoever holds it could
   * claim it; `accept`: granted to whoever posts it first, for an app that cannot set the token
   * (docs/mobile.md: the risk). @default refuse
   */
  readonly unboundStorePurchases?: 'refuse' | 'accept';
  /**
   * Browser origins allowed to call the API and the storage (CORS), comma-separated, e.g.
   * `https://app.example.com`. Empty: the site's CloudFront domain (`http://localhost:8787`
   * without a site). @default ''
   */
  readonly webOrigins?: string | readonly string[];
  /**
   * Per-IP rate limit in front of the API: requests per client IP in any 5 minutes. Set, the
   * construct adds a CloudFront distribution in front of the HTTP API with an AWS WAF web ACL
   * whose rate-based rule blocks an IP past the limit (WAF cannot be associated with an HTTP
   * API; CloudFront-scoped WAF is created in us-east-1 only, which a template rule enforces).
   * @default none (no distribution, no WAF)
   */
  readonly perIpRateLimit?: number;
  /** Deploy the web app's site (private bucket + CloudFront); off for the local cloud. @default true */
  readonly site?: boolean;
  /**
   * The built web app to upload into the site (`web/dist` after `npm run build`).
   * @default none: the site is created empty (upload with `aws s3 sync`)
   */
  readonly webDist?: string;
  /** API Gateway stage throttling. @default 25 requests/s steady, 50 burst */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
}

/**
 * Atelier as a construct: put it into any stack. Its resources keep the ids the ready-made
 * stack gave them (that stack instantiates it with the id `Default`, which CDK leaves out of
 * logical ids), and the useful ones are properties below.
 */
export class AtelierService extends Construct {
  /** The tables, by the schema's logical name (`accounts`, `ledger`, `jobs`, …). */
  readonly tables: Record<string, dynamodb.Table> = {};
  readonly functions: Record<FunctionKey, lambda.Function>;
  /** The job queue (the consumer's event source). */
  readonly queue: sqs.Queue;
  /** The webhook delivery queue: one message per (event, endpoint) attempt, consumed by the sweeper. */
  readonly webhookQueue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  /** The private assets bucket: uploads/ and results/. */
  readonly bucket: s3.Bucket;
  /** The model provider's API key (set its value after deploying). */
  readonly providerKey: secretsmanager.Secret;
  readonly geminiKey: secretsmanager.Secret;
  readonly signingKey: secretsmanager.Secret;
  /** The Stripe keys as JSON (set them after deploying). */
  readonly stripeKeys: secretsmanager.Secret;
  readonly pushKeys: secretsmanager.Secret;
  /** The Google Play service account's JSON key, read by the API at cold start (created empty: Google Play off). */
  readonly googlePlayKey: secretsmanager.Secret;
  /** The App Store Server API key (consumption answers); empty until the operator stores one. */
  readonly appleApiKey: secretsmanager.Secret;
  /** The key of the signup grant's address hashes (the API reads it at cold start). */
  readonly addressKey: secretsmanager.Secret;
  readonly httpApi: apigw.HttpApi;
  /** Base URL of the HTTP API (its `$default` stage, with a trailing slash). */
  readonly apiUrl: string;
  /** Every alarm notifies this topic (subscribe to it, or set `alarmEmail`). */
  readonly alarmTopic: sns.Topic;
  /**
   * With `jwtIssuer` a token (the ready-made stack's parameter): the condition "no issuer given"
   * that the user pool, its client and domain exist under; give it to anything (an output) that
   * names them. With a plain `jwtIssuer` (or none): undefined, the choice is made at synth.
   */
  readonly useCognito?: CfnCondition;
  /** The Cognito user pool, unless a plain `jwtIssuer` was given. */
  readonly userPool?: cognito.UserPool;
  /** The pool's app client (the tokens' audience), unless a plain `jwtIssuer` was given. */
  readonly userPoolClient?: cognito.UserPoolClient;
  /** The web app's site, unless `site` is false. */
  readonly site?: WebSite;
  /** The CloudFront distribution with the per-IP WAF rule, when `perIpRateLimit` is set. */
  readonly apiFront?: cloudfront.Distribution;

  /** The tables' definitions (`props.schema`, else infra/schema.json). */
  readonly schemaDefs: TableDef[];

  private readonly props: AtelierServiceProps;
  private readonly alarmAction: SnsAction;
  private readonly models: ModelCatalogue;
  private readonly modelCheckDate: string;

  constructor(scope: Construct, id: string, props: AtelierServiceProps) {
    super(scope, id);
    this.props = props;
    const stack = Stack.of(this);
    const prod = props.stage === 'prod';
    const arch = props.arch ?? 'x86_64';
    const removalPolicy = prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = prod ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.TWO_WEEKS;
    this.schemaDefs = props.schema ?? loadSchema();
    this.models = props.models ?? loadModels();
    this.modelCheckDate = props.modelCheckDate ?? utcToday();
    const envNames = props.envNames ?? loadEnvNames();
    Tags.of(this).add('project', 'atelier');
    Tags.of(this).add('stage', props.stage);

    // ---------------------------------------------------------------- settings
    const jwtIssuer = checkPattern('jwtIssuer', props.jwtIssuer ?? '', JWT_ISSUER_PATTERN);
    const jwtAudience = props.jwtAudience ?? '';
    const alarmEmail = checkPattern('alarmEmail', props.alarmEmail ?? '', ALARM_EMAIL_PATTERN);
    const webOrigins = checkPattern('webOrigins', commaJoined(props.webOrigins) ?? '', WEB_ORIGINS_PATTERN);
    const maxConcurrency = intSetting('consumerMaxConcurrency', props.consumerMaxConcurrency);
    const sweeperReserved = intSetting('sweeperReservedConcurrency', props.sweeperReservedConcurrency);
    // By default the consumer reserves exactly what its event source may run at once.
    const consumerReserved = intSetting('consumerReservedConcurrency', props.consumerReservedConcurrency ?? maxConcurrency);
    const apiReserved = intSetting('apiReservedConcurrency', props.apiReservedConcurrency);
    if (
      !Token.isUnresolved(consumerReserved) &&
      !Token.isUnresolved(maxConcurrency) &&
      consumerReserved > 0 &&
      consumerReserved < maxConcurrency
    ) {
      throw new Error(
        `AtelierService: consumerReservedConcurrency (${consumerReserved}) must be 0 or at least consumerMaxConcurrency (${maxConcurrency})`,
      );
    }

    // A setting given as a token (the stack's parameters) becomes a condition CloudFormation
    // evaluates; a plain value is decided here, so the template has no constant condition
    // (CDK warns about those, W8003) and no resource that can never exist.
    const useCognito = Token.isUnresolved(jwtIssuer)
      ? new CfnCondition(this, 'UseCognito', { expression: Fn.conditionEquals(jwtIssuer, '') })
      : undefined;
    this.useCognito = useCognito;
    const cognitoWanted = useCognito !== undefined || jwtIssuer === '';
    /** The Cognito value, or the given issuer's: by the condition, or decided now. */
    const byIssuer = (cognitoValue: () => string, givenValue: string): string =>
      useCognito
        ? Fn.conditionIf(useCognito.logicalId, cognitoValue(), givenValue).toString()
        : cognitoWanted
          ? cognitoValue()
          : givenValue;
    if (Token.isUnresolved(jwtIssuer) || Token.isUnresolved(jwtAudience)) {
      new CfnRule(this, 'AudienceGoesWithIssuer', {
        ruleCondition: Fn.conditionNot(Fn.conditionEquals(jwtIssuer, '')),
        assertions: [
          {
            assert: Fn.conditionNot(Fn.conditionEquals(jwtAudience, '')),
            assertDescription: 'JwtAudience is required when JwtIssuer is set',
          },
        ],
      });
    } else if (jwtIssuer !== '' && jwtAudience === '') {
      throw new Error('AtelierService: jwtAudience is required when jwtIssuer is set');
    }

    // ---------------------------------------------------------------- tables
    for (const def of this.schemaDefs) this.tables[def.logical] = this.table(def, prod, removalPolicy);

    // ---------------------------------------------------------------- queue
    this.deadLetterQueue = new sqs.Queue(this, 'JobsDeadLetterQueue', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy,
    });
    this.queue = new sqs.Queue(this, 'JobsQueue', {
      visibilityTimeout: QUEUE_VISIBILITY,
      retentionPeriod: Duration.days(4),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: MAX_RECEIVE_COUNT },
      removalPolicy,
    });
    const webhookDlq = new sqs.Queue(this, 'WebhookDeadLetterQueue', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy,
    });
    Validations.of(webhookDlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This is the dead-letter queue of WebhookQueue; a DLQ of a DLQ would only hide messages further.',
    });
    this.webhookQueue = new sqs.Queue(this, 'WebhookQueue', {
      // At least the sweeper's timeout (a batch of POSTs of 15 s each, made at once).
      visibilityTimeout: Duration.minutes(2),
      retentionPeriod: Duration.days(4),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: webhookDlq, maxReceiveCount: MAX_RECEIVE_COUNT },
      removalPolicy,
    });
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This is the dead-letter queue of JobsQueue; a DLQ of a DLQ would only hide messages further.',
    });

    // ---------------------------------------------------------------- bucket
    const uploadDays = intSetting('uploadRetentionDays', props.uploadRetentionDays);
    const resultDays = intSetting('resultRetentionDays', props.resultRetentionDays);
    this.bucket = new s3.Bucket(this, 'Assets', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      lifecycleRules: [
        { id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        { id: 'expire-abandoned-uploads', prefix: 'uploads/', expiration: Duration.days(uploadDays) },
        { id: 'expire-results', prefix: 'results/', expiration: Duration.days(resultDays) },
      ],
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Objects are reached only through presigned URLs that the API issues and logs (event upload_presigned); ' +
        'a second bucket of access logs would add cost without adding who-asked-for-what. Enable CloudTrail data events where audit requires it.',
    });

    // ---------------------------------------------------------------- provider key
    this.providerKey = new secretsmanager.Secret(this, 'ModelProviderKey', {
      description: 'API key of the model provider, read by the consumer at cold start. Set it after deploying (infra/README.md).',
      removalPolicy,
    });
    Validations.of(this.providerKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'A third-party API key: it is rotated at the provider and then stored with put-secret-value; Secrets Manager cannot rotate it.',
    });
    // Read only when a provider list names gemini.
    this.geminiKey = new secretsmanager.Secret(this, 'GeminiProviderKey', {
      description: 'API key of Google Gemini, read by the consumer at cold start when a provider list names gemini. Set it after deploying (infra/README.md).',
      removalPolicy,
    });
    Validations.of(this.geminiKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'A third-party API key: it is rotated at the provider and then stored with put-secret-value; Secrets Manager cannot rotate it.',
    });

    // ---------------------------------------------------------------- signing key
    // The content credentials' signing key and certificate chain (docs/design.md, "Results say
    // what made them"). No value until the operator stores one: the consumer then refuses to
    // start rather than deliver a result that does not say it was edited with AI.
    this.signingKey = new secretsmanager.Secret(this, 'SigningKey', {
      description:
        'Content credentials (C2PA) signing key as JSON {"certificate_chain": "PEM, signing certificate first", "private_key": "PKCS #8 PEM, P-256"}, read by the consumer at cold start. Set it before the first edit (infra/README.md).',
      removalPolicy,
    });
    Validations.of(this.signingKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'A certificate issued by a CA outside AWS: renewed there, then stored with put-secret-value; Secrets Manager cannot rotate it.',
    });

    // ---------------------------------------------------------------- address key
    // The key of the HMAC-SHA256 under which a verified address is recorded with its signup
    // grant. Generated, never shown; never rotated (a new key would make every address's grant
    // available again).
    this.addressKey = new secretsmanager.Secret(this, 'AddressKey', {
      description: "Key of the signup grant's address hashes (HMAC-SHA256), read by the API at cold start. Generated; never rotate it.",
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy,
    });
    Validations.of(this.addressKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Rotating the key would make every address eligible for a second signup grant; it is kept.',
    });

    // ---------------------------------------------------------------- Stripe keys
    // Empty keys until the operator stores real ones (infra/README.md); the API then leaves
    // buying off instead of failing to start.
    this.stripeKeys = new secretsmanager.Secret(this, 'StripeKeys', {
      description:
        'Stripe keys as JSON {"secret_key": "sk_...", "webhook_secret": "whsec_..."}, read by the API at cold start. Set them after deploying (infra/README.md).',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ secret_key: '', webhook_secret: '' }),
        generateStringKey: 'placeholder',
      },
      removalPolicy,
    });
    Validations.of(this.stripeKeys).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Third-party keys: rolled in the Stripe dashboard and then stored with put-secret-value; Secrets Manager cannot rotate them.',
    });

    // ---------------------------------------------------------------- push keys
    // No credentials until the operator stores them (docs/mobile.md); the sweeper then leaves
    // push off instead of failing to start.
    this.pushKeys = new secretsmanager.Secret(this, 'PushKeys', {
      description:
        'Push credentials as JSON {"apns": {...}, "fcm": {...}} (docs/mobile.md), read by the sweeper at cold start. Push is off until they are set.',
      generateSecretString: { secretStringTemplate: JSON.stringify({}), generateStringKey: 'placeholder' },
      removalPolicy,
    });
    Validations.of(this.pushKeys).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Third-party keys: rolled in the Apple and Firebase consoles and then stored with put-secret-value; Secrets Manager cannot rotate them.',
    });

    // ---------------------------------------------------------------- Google Play key
    // Empty until the operator stores the service account's key (docs/operations.md): the API
    // then leaves Google Play off instead of failing to start.
    this.googlePlayKey = new secretsmanager.Secret(this, 'GooglePlayKey', {
      description:
        "Google Play service account's JSON key (client_email, private_key), read by the API at cold start. Google Play purchases are off until it is set.",
      generateSecretString: { secretStringTemplate: JSON.stringify({}), generateStringKey: 'placeholder' },
      removalPolicy,
    });
    Validations.of(this.googlePlayKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Third-party key: rolled in the Google Cloud console and then stored with put-secret-value; Secrets Manager cannot rotate it.',
    });

    // ---------------------------------------------------------------- App Store Server API key
    // Empty until the operator stores an In-App Purchase key (docs/operations.md): the API then
    // answers no CONSUMPTION_REQUEST instead of failing to start.
    this.appleApiKey = new secretsmanager.Secret(this, 'AppleApiKey', {
      description:
        'App Store Server API key (keyId, issuerId, privateKey), read by the API at cold start to answer CONSUMPTION_REQUEST notifications for accounts that consented. Off until it is set.',
      generateSecretString: { secretStringTemplate: JSON.stringify({}), generateStringKey: 'placeholder' },
      removalPolicy,
    });
    Validations.of(this.appleApiKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Third-party key: rolled in App Store Connect and then stored with put-secret-value; Secrets Manager cannot rotate it.',
    });

    // ---------------------------------------------------------------- functions
    const env = functionEnvironment(envNames, this.envValues());
    // Only the consumer may read the provider key and only the API the Stripe keys, so only
    // they are told where each is.
    const envFor = (key: FunctionKey) =>
      Object.fromEntries(
        Object.entries(env).filter(
          ([k]) =>
            (key === 'consumer' || !CONSUMER_ONLY_ENV.has(k)) &&
            (key === 'api' || !API_ONLY_ENV.has(k)) &&
            (key === 'sweeper' || !SWEEPER_ONLY_ENV.has(k)),
        ),
      );
    const fn = (key: FunctionKey, memoryMb: number, timeout: Duration, description: string) => {
      const name = FUNCTIONS[key];
      const logGroup = new logs.LogGroup(this, `${pascal(key)}Logs`, { retention: logRetention, removalPolicy });
      const role = new iam.Role(this, `${pascal(key)}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `${name}: least privilege, written out in AtelierStack`,
      });
      logGroup.grantWrite(role);
      return new lambda.Function(this, pascal(key), {
        description,
        runtime: lambda.Runtime.PROVIDED_AL2023,
        architecture: arch === 'arm64' ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
        handler: 'bootstrap',
        code: props.code?.[key] ?? this.code(name, arch, props),
        memorySize: memoryMb,
        timeout,
        role,
        logGroup,
        loggingFormat: lambda.LoggingFormat.JSON,
        applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
        systemLogLevelV2: lambda.SystemLogLevel.WARN,
        environment: envFor(key),
      });
    };
    const api = fn('api', 512, Duration.seconds(29), 'HTTP API: validate, debit, insert, enqueue, 202');
    const consumer = fn('consumer', 1024, CONSUMER_TIMEOUT, 'Job consumer: claim, check, reserve, edit, review, deliver');
    const sweeper = fn('sweeper', 256, Duration.minutes(1), 'Sweeper: re-enqueue, fail and refund the stuck, settle orphans');
    this.functions = { api, consumer, sweeper };
    this.reserveConcurrency(sweeper, 'Sweeper', sweeperReserved);
    this.reserveConcurrency(consumer, 'Consumer', consumerReserved);
    this.reserveConcurrency(api, 'Api', apiReserved);

    // DynamoDB rights, function by function and table by table: terraform/data-grants.json,
    // the one list this construct and the Terraform module both read.
    for (const [key, f] of Object.entries(this.functions) as [FunctionKey, lambda.Function][]) {
      this.grantData(f.role!, DATA_GRANTS[key]);
    }
    // The API alone reads the Stripe keys (checkout and the webhook's signature check), the
    // address key (the signup grant's address hashes), the Google Play key (it calls the
    // Android Publisher API) and the App Store Server API key (it answers consumption requests).
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [
          this.stripeKeys.secretArn,
          this.addressKey.secretArn,
          this.googlePlayKey.secretArn,
          this.appleApiKey.secretArn,
        ],
      }),
    );
    // The sweeper alone reads the push credentials (it sends the pushes).
    sweeper.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [this.pushKeys.secretArn] }),
    );
    // The API enqueues (the doorbell) and presigns: PUT into uploads/, GET/HEAD of objects.
    // The edit's kept inputs (results/{user}/{job}/inputs/) are copied by the consumer.
    allowSend(api, this.queue);
    api.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [this.bucket.arnForObjects('uploads/*')] }),
    );
    // Deletion (an upload, an edit's images, an account) removes and lists users' objects;
    // the sweeper finishes the account deletions a processing job left pending.
    for (const f of [api, sweeper]) {
      f.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:DeleteObject'],
          resources: [this.bucket.arnForObjects('uploads/*'), this.bucket.arnForObjects('results/*')],
        }),
      );
      f.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:ListBucket'],
          resources: [this.bucket.bucketArn],
          conditions: { StringLike: { 's3:prefix': ['uploads/*', 'results/*'] } },
        }),
      );
    }
    api.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects('*')] }),
    );
    // The consumer reads inputs and writes results, and alone reads the provider key.
    // It copies an edit's inputs (uploads/ → results/…/inputs/) and writes only under results/.
    consumer.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects('*')] }),
    );
    consumer.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [this.bucket.arnForObjects('results/*')] }),
    );
    consumer.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.providerKey.secretArn, this.geminiKey.secretArn, this.signingKey.secretArn],
      }),
    );
    // The sweeper re-rings the doorbell; it reads no image.
    allowSend(sweeper, this.queue);
    const objectsReason =
      'Object keys are per user and asset (uploads/{user}/{kind}/{asset}, results by job), so the bucket’s own objects ' +
      '(or the uploads/ prefix) are the narrowest fixed resource; the bucket is private and nothing else lives in it.';
    for (const f of [api, consumer]) {
      Validations.of(f.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/*]`,
        reason: objectsReason,
      });
    }
    Validations.of(consumer.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/results/*]`,
      reason: objectsReason,
    });
    for (const prefix of ['uploads/*', 'results/*']) {
      Validations.of(sweeper.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/${prefix}]`,
        reason: objectsReason,
      });
    }
    for (const prefix of ['uploads/*', 'results/*']) {
      Validations.of(api.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/${prefix}]`,
        reason: objectsReason,
      });
    }

    // ---------------------------------------------------------------- queue → consumer
    consume(consumer, 'JobsQueueToConsumer', this.queue, { batchSize: 1, maxConcurrency });

    // ---------------------------------------------------------------- schedule → sweeper
    sweeper.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    new events.Rule(this, 'SweepEveryMinute', {
      description: 'Run the sweeper once a minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(sweeper, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
    });

    // ---------------------------------------------------------------- identity (default issuer)
    const userPool = !cognitoWanted ? undefined : new cognito.UserPool(this, 'Users', {
      selfSignUpEnabled: true,
      signInAliases: { email: true },
      autoVerify: { email: true },
      // A changed address must be verified before it replaces the verified one, so the ID
      // token's email_verified (which decides the signup grant) is never true for an
      // unconfirmed address.
      keepOriginal: { email: true },
      accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
      },
      mfa: cognito.Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      deletionProtection: prod,
      removalPolicy,
    });
    const issuer = byIssuer(() => `https://cognito-idp.${stack.region}.amazonaws.com/${userPool!.userPoolId}`, jwtIssuer);

    // ---------------------------------------------------------------- web app and its origins
    if (props.site ?? true) {
      this.site = new WebSite(this, 'Web', {
        removalPolicy,
        webDist: props.webDist,
        // Wildcards, not the API's and issuer's own hosts: the API's CORS names this
        // distribution, so naming the API here would be a dependency cycle.
        connectSrc: [
          `https://*.execute-api.${stack.region}.${stack.urlSuffix}`,
          `https://cognito-idp.${stack.region}.${stack.urlSuffix}`,
          `https://*.auth.${stack.region}.amazoncognito.com`,
          ...(cognitoWanted && !useCognito ? [] : [byIssuer(() => Aws.NO_VALUE, jwtIssuer)]),
        ],
      });
    }
    const defaultOrigin = this.site?.origin ?? DEV_WEB_ORIGIN;
    const allowedOrigins = !Token.isUnresolved(webOrigins)
      ? webOrigins === ''
        ? [defaultOrigin]
        : webOrigins.split(',')
      : Token.asList(
          Fn.conditionIf(
            new CfnCondition(this, 'DefaultWebOrigins', { expression: Fn.conditionEquals(webOrigins, '') })
              .logicalId,
            [defaultOrigin],
            Fn.split(',', webOrigins),
          ),
        );
    // The browser PUTs uploads and GETs results on presigned URLs; the signature (length and
    // type included) is the credential, CORS only decides which pages may read the answer.
    const cors = loadCors();
    this.bucket.addCorsRule({
      allowedMethods: cors.bucket.allow_methods.map((m) => m as s3.HttpMethods),
      allowedOrigins,
      allowedHeaders: [...cors.bucket.allow_headers],
      exposedHeaders: [...cors.bucket.expose_headers],
      maxAge: cors.bucket.max_age_secs,
    });

    // The hosted UI: authorization code + PKCE back to the web app (no client secret), at the
    // first allowed origin.
    const appUrl = Fn.join('', [Fn.select(0, allowedOrigins), '/']);
    const userPoolClient = userPool?.addClient('App', {
      authFlows: { userSrp: true },
      generateSecret: false,
      preventUserExistenceErrors: true,
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
        callbackUrls: [appUrl],
        logoutUrls: [appUrl],
      },
    });
    this.userPool = userPool;
    this.userPoolClient = userPoolClient;
    if (userPool) {
      const hostedUi = userPool.addDomain('HostedUi', {
        // Globally unique: stage and account (two stacks of one stage in one account would clash).
        cognitoDomain: { domainPrefix: props.authDomainPrefix ?? `atelier-${props.stage}-${stack.account}` },
      });
      if (useCognito) {
        for (const c of [userPool, userPoolClient!, hostedUi]) {
          (c.node.defaultChild as CfnResource).cfnOptions.condition = useCognito;
        }
      }
      Validations.of(userPool).acknowledge(
        {
          id: 'AwsSolutions-COG2',
          reason: 'MFA is offered (TOTP) but not forced: a consumer photo app; money moves only in credits bought through the store.',
        },
        {
          id: 'AwsSolutions-COG3',
          reason: PLUS_PLAN_REASON,
        },
        {
          id: 'AwsSolutions-COG8',
          reason: PLUS_PLAN_REASON,
        },
      );
    }
    const audience = byIssuer(() => userPoolClient!.userPoolClientId, jwtAudience);

    // ---------------------------------------------------------------- HTTP API
    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: `Atelier API (${props.stage})`,
      createDefaultStage: false,
      // API Gateway answers preflights itself (before the JWT authorizer) for these.
      corsPreflight: {
        allowOrigins: allowedOrigins,
        allowMethods: cors.api.allow_methods.map((m) => m as apigw.CorsHttpMethod),
        allowHeaders: [...cors.api.allow_headers],
        exposeHeaders: [...cors.api.expose_headers],
        allowCredentials: false,
        maxAge: Duration.seconds(cors.api.max_age_secs),
      },
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logRetention, removalPolicy });
    const throttle = props.throttle ?? DEFAULTS.throttle;
    const apiStage = this.httpApi.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            method: '$context.httpMethod',
            route: '$context.routeKey',
            status: '$context.status',
            latencyMs: '$context.responseLatency',
            integrationLatencyMs: '$context.integrationLatency',
            responseLength: '$context.responseLength',
            user: '$context.authorizer.claims.sub',
            authorizerError: '$context.authorizer.error',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    this.apiUrl = apiStage.url;
    const integration = new HttpLambdaIntegration('ApiIntegration', api);
    const authorizer = new HttpJwtAuthorizer('Jwt', issuer, {
      jwtAudience: [audience],
      identitySource: ['$request.header.Authorization'],
    });
    this.httpApi.addRoutes({ path: '/{proxy+}', methods: [apigw.HttpMethod.ANY], integration, authorizer });
    for (const path of PUBLIC_ROUTES) {
      const [route] = this.httpApi.addRoutes({ path, methods: [apigw.HttpMethod.GET], integration });
      Validations.of(route!).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason: `GET ${path} is public by design (health, style catalogue, OpenAPI document, credit packs); every other route needs a JWT.`,
      });
    }
    for (const path of SIGNED_WEBHOOK_ROUTES) {
      const [route] = this.httpApi.addRoutes({ path, methods: [apigw.HttpMethod.POST], integration });
      Validations.of(route!).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason: `POST ${path} is called by Stripe, the App Store or Google's Pub/Sub, which have no JWT of our issuer: the function verifies the Stripe-Signature (HMAC of the raw body), Apple's signed payload (ES256, the x5c chain to Apple's root) or Pub/Sub's OIDC token (RS256 by Google's keys, issuer, audience, service account) and refuses every unsigned request.`,
      });
    }

    if (props.perIpRateLimit !== undefined) this.apiFront = this.perIpFront(props.perIpRateLimit);

    // ---------------------------------------------------------------- alarms
    const alarmTopic = (this.alarmTopic = new sns.Topic(this, 'Alarms', { displayName: `Atelier ${props.stage} alarms`, enforceSSL: true }));
    Validations.of(alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'Alarm notifications carry metric names and thresholds only. CloudWatch cannot publish to a topic under the AWS managed SNS key, ' +
        'and a customer managed key would cost more than the rest of this stack at rest.',
    });
    if (Token.isUnresolved(alarmEmail) || alarmEmail !== '') {
      const subscription = new sns.CfnSubscription(this, 'AlarmEmailSubscription', {
        topicArn: alarmTopic.topicArn,
        protocol: 'email',
        endpoint: alarmEmail,
      });
      if (Token.isUnresolved(alarmEmail)) {
        subscription.cfnOptions.condition = new CfnCondition(this, 'HasAlarmEmail', {
          expression: Fn.conditionNot(Fn.conditionEquals(alarmEmail, '')),
        });
      }
    }
    this.alarmAction = new SnsAction(alarmTopic);
    const alarm = (id: string, a: cloudwatch.AlarmProps) => this.addAlarm(id, a);
    alarm('DeadLetterQueueNotEmpty', {
      alarmDescription: 'A job message failed every delivery. Look at the job (jobId in the body) and the consumer logs; the sweeper refunds it if it is stuck.',
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm('ConsumerErrors', {
      alarmDescription: 'The consumer failed invocations (crash, timeout, or an Err at its edge).',
      metric: consumer.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm('JobsStuck', {
      alarmDescription: `The sweeper found jobs in processing for more than ${STUCK_AFTER.toMinutes()} minutes (it fails and refunds them).`,
      metric: new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: METRICS.jobsStuck,
        dimensionsMap: { FunctionName: sweeper.functionName },
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm('RefundsFailed', {
      alarmDescription:
        'The sweeper owed refunds (jobs past the dispatch limit or stuck in processing) and its refund transaction failed: ' +
        'users are owed credits. Look at the sweeper logs for sweep_refund_failed (job_id, user_id, credits, error chain); ' +
        'the next sweep retries every minute. If it persists, check DynamoDB errors/throttling on the jobs, accounts and ledger ' +
        'tables and the sweeper role; then run atelier-admin audit.',
      metric: new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: METRICS.refundsFailed,
        dimensionsMap: { FunctionName: sweeper.functionName },
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm('SweeperNotRunning', {
      alarmDescription:
        'The sweeper has not run for 15 minutes (its schedule is every minute): nothing re-sends queued jobs, refunds stuck ' +
        'ones, settles orphaned reservations or delivers webhooks. Check the EventBridge rule (enabled?), the sweeper\'s ' +
        'reserved concurrency and its role; a manual `aws lambda invoke` of the sweeper runs one round.',
      metric: sweeper.metricInvocations({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    alarm('PaymentSignatureInvalid', {
      alarmDescription:
        'Stripe webhook deliveries failed the signature check: if the webhook secret is wrong, paid credits never arrive. ' +
        'Compare the stack\'s Stripe webhook secret with the endpoint\'s signing secret in the Stripe dashboard; Stripe ' +
        'retries for three days, so fixing the secret delivers what was refused.',
      metric: new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: metricName('paymentEvents'),
        dimensionsMap: { FunctionName: api.functionName, Outcome: metricValue('paymentSignatureInvalid') },
        period: Duration.minutes(5),
        statistic: 'Sum',
      }),
      threshold: 3,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm('PurchaseReversals', {
      alarmDescription:
        `At least ${REVERSALS_ALARM_PER_HOUR} purchases were refunded or disputed within an hour: a burst of chargebacks ` +
        'is usually stolen cards buying credits. Each reversal already took back what was left of its credits (never below ' +
        'zero) and put an account whose credits were spent on hold; look at the api logs (purchase_reversed: user_id, ' +
        'payment_id, shortfall), atelier-admin user show, and the disputes in the Stripe dashboard.',
      metric: new cloudwatch.Metric({
        namespace: METRICS.namespace,
        metricName: metricName('paymentEvents'),
        dimensionsMap: { FunctionName: api.functionName, Outcome: metricValue('paymentReversed') },
        period: Duration.hours(1),
        statistic: 'Sum',
      }),
      threshold: REVERSALS_ALARM_PER_HOUR,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    for (const v of VERIFICATION_ALARMS) {
      alarm(v.id, {
        alarmDescription: v.description,
        metric: new cloudwatch.Metric({
          namespace: METRICS.namespace,
          metricName: metricName('verificationFailures'),
          dimensionsMap: { FunctionName: (v.fn === 'api' ? api : sweeper).functionName, Source: metricValue(v.source) },
          period: Duration.minutes(5),
          statistic: 'Sum',
        }),
        threshold: v.threshold,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    if (this.tables.webhooks) {
      addWebhooks({
        scope: this,
        table: this.tables.webhooks,
        sweeper,
        queue: this.webhookQueue,
        namespace: METRICS.namespace,
        alarm,
      });
    }
    addModelAlarms({ catalogue: this.models, consumer, sweeper, alarm });
    alarm('SweeperErrors', {
      alarmDescription:
        'The sweeper failed invocations: a crash, a timeout, or a sweep whose refunds failed (see RefundsFailed). ' +
        'Nothing else re-sends queued jobs or refunds stuck ones; look at the sweeper logs (sweep_completed, sweep_refund_failed, config_invalid).',
      metric: sweeper.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const atLeast = {
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    };
    for (const pct of BUDGET_ALERT_PERCENTS) {
      alarm(`BudgetPast${pct}Percent`, {
        alarmDescription:
          `Model spend (used + reserved) passed ${pct}% of the daily cap; at 100% the breaker refuses paid calls and jobs fail BUDGET_PAUSED (refunded). ` +
          'Look at `atelier-admin budget show` (top spenders, headroom); raise the cap with `budget set-cap` or halt with `budget halt` if the spend is abuse.',
        metric: new cloudwatch.Metric({
          namespace: METRICS.namespace,
          metricName: METRICS.budgetUsedPercent,
          dimensionsMap: { FunctionName: consumer.functionName },
          period: Duration.minutes(5),
          statistic: 'Maximum',
        }),
        threshold: pct,
        ...atLeast,
      });
    }
    for (const { code, threshold } of OUTAGE_CODES) {
      const name = code.toLowerCase().split('_').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
      alarm(`Jobs${name}`, {
        alarmDescription:
          `${threshold} or more jobs failed ${code} in 5 minutes: the model provider is likely down or refusing (each job was refunded). ` +
          'Look at the consumer logs for call_recorded (outcome model_provider_error / model_timeout) and the provider status; ' +
          '`atelier-admin job show ID` shows one job\'s calls. `atelier-admin budget halt` stops paid calls until it recovers.',
        metric: new cloudwatch.Metric({
          namespace: METRICS.namespace,
          metricName: METRICS.jobsFinished,
          dimensionsMap: { FunctionName: consumer.functionName, Outcome: 'failed', FailureCode: code },
          period: Duration.minutes(5),
          statistic: 'Sum',
        }),
        threshold,
        ...atLeast,
      });
    }
    alarm('ApiServerErrors', {
      alarmDescription:
        'The HTTP API answered 5 or more 5xx in 5 minutes. Look at the api function logs for request_failed (the error chain) and its Errors/Throttles; ' +
        'a 502/503 without a log line is API Gateway failing to reach the function.',
      metric: this.httpApi.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 5,
      ...atLeast,
    });
    alarm('ApiLatency', {
      alarmDescription:
        'The HTTP API p99 latency was 3 s or more for 15 minutes. Look at DynamoDB latency/throttling on the accounts and jobs tables, ' +
        'and the api function Duration (cold starts, memory).',
      metric: this.httpApi.metricLatency({ period: Duration.minutes(5), statistic: 'p99' }),
      threshold: 3000,
      ...atLeast,
      evaluationPeriods: 3,
    });
    alarm('ApiErrors', {
      alarmDescription: 'The api function failed invocations (crash, timeout); clients saw 5xx. Look at its logs (request_failed, config_invalid).',
      metric: api.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      ...atLeast,
    });
    for (const [key, f] of [['Api', api], ['Consumer', consumer], ['Sweeper', sweeper]] as const) {
      alarm(`${key}Throttles`, {
        alarmDescription:
          `The ${key.toLowerCase()} function was throttled: the account's concurrency ran out. Look at ConcurrentExecutions across the account; ` +
          'the sweeper and the consumer have reserved concurrency (parameters), the API shares the pool unless ApiReservedConcurrency is set.',
        metric: f.metricThrottles({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: 1,
        ...atLeast,
      });
    }
    alarm('OldestQueuedJob', {
      alarmDescription:
        'A job message has waited 10 minutes or more in the queue: the consumer is not keeping up or not running. Look at the consumer Errors/Throttles ' +
        'and its event source mapping; queued jobs past the queued deadline are refunded by the sweeper (DISPATCH_LIMIT).',
      metric: this.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: 600,
      ...atLeast,
    });

    // Ledger tamper alarm, daily audit, delivery p95 (infra/lib/ledger-guard.ts); the dashboard.
    addLedgerGuard(this, {
      ledger: this.tables.ledger!,
      accounts: this.tables.accounts!,
      sweeper,
      consumer,
      alarmAction: this.alarmAction,
    });
    addDashboard(this, { stage: props.stage, api, consumer, sweeper, queue: this.queue, budgetAlertPercents: BUDGET_ALERT_PERCENTS });
  }

  /**
   * An alarm in this service that notifies `alarmTopic` (what the service's own alarms use;
   * add your own the same way).
   */
  addAlarm(id: string, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const made = new cloudwatch.Alarm(this, id, props);
    made.addAlarmAction(this.alarmAction);
    return made;
  }

  /**
   * Per-IP limits in front of the API: WAF cannot be associated with an API Gateway HTTP API
   * (only REST APIs, CloudFront, ALB, AppSync, …), so a CloudFront distribution forwards
   * everything to the HTTP API uncached, and a CloudFront-scoped web ACL blocks an IP past
   * `limit` requests in 5 minutes. The HTTP API's own URL stays reachable: the limit binds
   * clients that use the published `ApiCdnUrl`; stage throttling still bounds the rest.
   */
  private perIpFront(limit: number): cloudfront.Distribution {
    if (!Number.isInteger(limit) || limit < 10 || limit > 2_000_000_000) {
      throw new Error(`perIpRateLimit must be an integer in 10..2000000000 (WAF's range), not ${limit}`);
    }
    new CfnRule(this, 'PerIpRateLimitNeedsUsEast1', {
      assertions: [
        {
          assert: Fn.conditionEquals(Aws.REGION, 'us-east-1'),
          assertDescription: 'A CloudFront-scoped WAF web ACL (perIpRateLimit) is created in us-east-1 only',
        },
      ],
    });
    const metric = (name: string) => ({ cloudWatchMetricsEnabled: true, metricName: name, sampledRequestsEnabled: true });
    const acl = new wafv2.CfnWebACL(this, 'PerIpLimits', {
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      description: `Atelier: at most ${limit} requests per client IP in 5 minutes`,
      visibilityConfig: metric('AtelierPerIp'),
      rules: [
        {
          name: 'per-ip-rate',
          priority: 0,
          action: { block: {} },
          statement: { rateBasedStatement: { limit, aggregateKeyType: 'IP', evaluationWindowSec: 300 } },
          visibilityConfig: metric('AtelierPerIpRate'),
        },
      ],
    });
    const apiHost = `${this.httpApi.apiId}.execute-api.${Stack.of(this).region}.${Stack.of(this).urlSuffix}`;
    const cdn = new cloudfront.Distribution(this, 'ApiFront', {
      comment: 'Atelier API behind per-IP rate limits (WAF)',
      webAclId: acl.attrArn,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: new origins.HttpOrigin(apiHost, { protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY }),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
        cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
        originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      },
    });
    Validations.of(cdn).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'No geo restriction: the product is offered worldwide.' },
      {
        id: 'AwsSolutions-CFR3',
        reason: 'The HTTP API writes an access log per request (with the client IP); WAF samples blocked requests.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason: 'The default *.cloudfront.net certificate; a custom domain with its own certificate sets TLS 1.2+.',
      },
    );
    return cdn;
  }

  /**
   * Values for every environment variable the stack knows how to fill. The code decides which
   * are read (env-names.json); names that are not listed are not set.
   */
  private envValues(): EnvValues {
    const p = this.props;
    // Each setting is read inside its thunk only: the ready-made stack's props create a
    // parameter on first read, so a variable the code does not list makes no parameter.
    const int = (name: IntSetting, value: () => number | undefined) => () =>
      Tokenization.stringifyNumber(intSetting(name, value()));
    const text = (name: string, value: string | undefined, fallback: string, pattern?: string) =>
      pattern ? checkPattern(name, value ?? fallback, pattern) : (value ?? fallback);
    const values: Record<string, () => string> = {
      ATELIER_QUEUE_URL: () => this.queue.queueUrl,
      ATELIER_WEBHOOK_QUEUE_URL: () => this.webhookQueue.queueUrl,
      ATELIER_BUCKET: () => this.bucket.bucketName,
      ATELIER_MAX_IN_FLIGHT: int('maxInFlight', () => p.maxInFlight),
      ATELIER_RESULT_RETENTION_DAYS: int('resultRetentionDays', () => p.resultRetentionDays),
      ATELIER_MODEL_BASE_URL: () => text('modelBaseUrl', p.modelBaseUrl, DEFAULTS.modelBaseUrl, URL_PATTERN),
      ATELIER_MODEL_API_KEY_SECRET_ID: () => this.providerKey.secretArn,
      ATELIER_EDIT_PROVIDERS: () => text('editProviders', p.editProviders, DEFAULTS.editProviders, PROVIDERS_PATTERN),
      ATELIER_VISION_PROVIDERS: () =>
        text('visionProviders', p.visionProviders, DEFAULTS.visionProviders, PROVIDERS_PATTERN),
      ATELIER_GEMINI_BASE_URL: () => text('geminiBaseUrl', p.geminiBaseUrl, DEFAULTS.geminiBaseUrl, URL_PATTERN),
      ATELIER_GEMINI_API_KEY_SECRET_ID: () => this.geminiKey.secretArn,
      ATELIER_SIGNING_SECRET_ID: () => this.signingKey.secretArn,
      ATELIER_IMAGE_MODEL: () => checkModel(this.models, 'imageModel', p.imageModel, 'edit', this.modelCheckDate),
      ATELIER_VISION_MODEL: () => checkModel(this.models, 'visionModel', p.visionModel, 'vision', this.modelCheckDate),
      ATELIER_DAILY_CAP_MICROS: int('dailyCapMicros', () => p.dailyCapMicros),
      ATELIER_USER_DAILY_SHARE_MICROS: int('userDailyShareMicros', () => p.userDailyShareMicros),
      ATELIER_UPLOAD_SLOTS_PER_DAY: int('uploadSlotsPerDay', () => p.uploadSlotsPerDay),
      ATELIER_UPLOAD_BYTES_PER_DAY: int('uploadBytesPerDay', () => p.uploadBytesPerDay),
      ATELIER_REQUESTS_PER_WINDOW: int('requestsPerWindow', () => p.requestsPerWindow),
      ATELIER_REQUEST_WINDOW_SECS: int('requestWindowSecs', () => p.requestWindowSecs),
      ATELIER_EMAIL_VERIFIED_CLAIM: () =>
        text('emailVerifiedClaim', p.emailVerifiedClaim, DEFAULTS.emailVerifiedClaim, EMAIL_VERIFIED_CLAIM_PATTERN),
      ATELIER_STRIPE_SECRET_ID: () => this.stripeKeys.secretArn,
      ATELIER_ADDRESS_KEY_SECRET_ID: () => this.addressKey.secretArn,
      ATELIER_PUSH_SECRET_ID: () => this.pushKeys.secretArn,
      ATELIER_GOOGLE_PLAY_SECRET_ID: () => this.googlePlayKey.secretArn,
      ATELIER_APPLE_API_SECRET_ID: () => this.appleApiKey.secretArn,
      ATELIER_CREDIT_PACKS: () => text('creditPacks', packsText(p.creditPacks), DEFAULTS.creditPacks, CREDIT_PACKS_PATTERN),
      ATELIER_CHECKOUT_RETURN_URLS: () =>
        text('checkoutReturnUrls', commaJoined(p.checkoutReturnUrls), DEFAULTS.checkoutReturnUrls),
      ...appleValues(p),
      ...googlePlayValues(p),
      ATELIER_UNBOUND_STORE_PURCHASES: () =>
        text('unboundStorePurchases', p.unboundStorePurchases, DEFAULTS.unboundStorePurchases, UNBOUND_PATTERN),
      ATELIER_STUCK_AFTER_SECS: () => String(STUCK_AFTER.toSeconds()),
      ATELIER_CONSUMER_TIMEOUT_SECS: () => String(CONSUMER_TIMEOUT.toSeconds()),
    };
    for (const def of this.schemaDefs) values[def.env] = () => this.tables[def.logical]!.tableName;
    return values;
  }

  private table(def: TableDef, prod: boolean, removalPolicy: RemovalPolicy): dynamodb.Table {
    const key = (k: { name: string; type: string }): dynamodb.Attribute => ({
      name: k.name,
      type: { S: dynamodb.AttributeType.STRING, N: dynamodb.AttributeType.NUMBER, B: dynamodb.AttributeType.BINARY }[
        k.type
      ]!,
    });
    const table = new dynamodb.Table(this, `${pascal(def.logical)}Table`, {
      partitionKey: key(def.partition_key),
      sortKey: def.sort_key ? key(def.sort_key) : undefined,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: prod,
      timeToLiveAttribute: def.ttl_attribute ?? undefined,
      removalPolicy,
    });
    for (const i of def.indexes) {
      table.addGlobalSecondaryIndex({
        indexName: i.name,
        partitionKey: key(i.partition_key),
        sortKey: i.sort_key ? key(i.sort_key) : undefined,
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
    (table.node.defaultChild as CfnResource).addMetadata(LOGICAL_TABLE_METADATA, def.logical);
    return table;
  }

  /** Item-level DynamoDB rights on named tables (and, for Query, on each of their indexes). */
  /**
   * Reserves `reserved` concurrent executions for `fn` (0: none). A parameter becomes the
   * condition `Reserve<name>Concurrency`, since AWS refuses a reservation of 0 on accounts
   * whose whole limit is 10.
   */
  private reserveConcurrency(fn: lambda.Function, name: string, reserved: number): void {
    const cfn = fn.node.defaultChild as lambda.CfnFunction;
    if (Token.isUnresolved(reserved)) {
      const reserve = new CfnCondition(this, `Reserve${name}Concurrency`, {
        expression: Fn.conditionNot(Fn.conditionEquals(Tokenization.stringifyNumber(reserved), '0')),
      });
      cfn.reservedConcurrentExecutions = Token.asNumber(Fn.conditionIf(reserve.logicalId, reserved, Aws.NO_VALUE));
    } else if (reserved > 0) {
      cfn.reservedConcurrentExecutions = reserved;
    }
  }

  /** The item actions on each table; Query alone on the indexes named (nothing else applies to one). */
  private grantData(role: iam.IRole, grants: Record<string, TableGrant>): void {
    for (const [logical, grant] of Object.entries(grants)) {
      const table = this.tables[logical];
      const def = this.schemaDefs.find((d) => d.logical === logical);
      if (!table || !def) throw new Error(`grantData: no table ${logical} in the schema`);
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...grant.actions], resources: [table.tableArn] }));
      const indexes = grant.indexes ?? [];
      for (const i of indexes) {
        if (!def.indexes.some((d) => d.name === i)) throw new Error(`grantData: ${logical} has no index ${i}`);
      }
      if (indexes.length > 0) {
        const resources = indexes.map((i) => `${table.tableArn}/index/${i}`);
        role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['dynamodb:Query'], resources }));
      }
    }
  }

  private code(name: string, arch: Arch, props: AtelierServiceProps): lambda.Code {
    if (props.placeholderCode) return lambda.Code.fromAsset(join(__dirname, '..', 'assets', 'placeholder'));
    if (props.distDir === undefined) {
      throw new Error(
        `AtelierService: no code for ${name}: give \`code\` (e.g. lambda.Code.fromBucket for a pipeline's zips) or ` +
          '`distDir` (the folder `cargo xtask package` writes, target/lambda-dist/<arch>)',
      );
    }
    const zip = join(props.distDir, name, 'bootstrap.zip');
    if (!existsSync(zip)) {
      throw new Error(
        `${zip} is missing: run \`cargo xtask package${arch === 'arm64' ? ' --arch arm64' : ''}\` first ` +
          '(or synthesize with --context atelier:placeholderCode=true to check the template only)',
      );
    }
    return lambda.Code.fromAsset(zip);
  }
}

/** One function's rights on one table: `terraform/data-grants.json`. */
export interface TableGrant {
  actions: readonly string[];
  indexes?: readonly string[];
  why: string;
}

/** Every function's DynamoDB rights, read from the list the Terraform module reads too. */
export const DATA_GRANTS: Record<FunctionKey, Record<string, TableGrant>> = (
  JSON.parse(readFileSync(join(__dirname, '..', 'terraform', 'data-grants.json'), 'utf8')) as {
    functions: Record<FunctionKey, Record<string, TableGrant>>;
  }
).functions;

const PLUS_PLAN_REASON =
  'Threat protection needs the Cognito Plus plan, billed per monthly active user; the default issuer is a starting point, ' +
  'and production may bring its own issuer (JwtIssuer) or turn the plan on when sign-up abuse shows.';

/** Variables only the consumer gets: where the model provider keys and the signing key are (only it can read them). */
export const CONSUMER_ONLY_ENV: ReadonlySet<string> = new Set([
  'ATELIER_MODEL_API_KEY_SECRET_ID',
  'ATELIER_GEMINI_API_KEY_SECRET_ID',
  'ATELIER_SIGNING_SECRET_ID',
]);

/**
 * Allowed values of the URL parameters (`JwtIssuer`, `ModelBaseUrl`): https, or plain http on
 * the loopback only. The local cloud (`cargo xtask cloud`) deploys this same template with the
 * dev issuer and the stand-in model on 127.0.0.1; a function in AWS cannot reach a loopback
 * address, so the exception admits nothing in a real account.
 */
export const URL_PATTERN = '^https://\\S+$|^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/\\S*)?$';
/** A provider list: openai and gemini, comma-separated, each at most once (the code refuses repeats too). */
export const PROVIDERS_PATTERN = '^(openai|gemini)(,(openai|gemini))?$';

/** A browser origin: https, or http on the loopback (local development). */
export const ORIGIN_PATTERN = '(https://[A-Za-z0-9.-]+(:[0-9]{1,5})?|http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?)';

/** `JwtIssuer`/`jwtIssuer`: empty (Cognito) or a URL. */
export const JWT_ISSUER_PATTERN = `^$|${URL_PATTERN}`;

/** `WebOrigins`/`webOrigins`: empty (the default origin) or comma-separated origins. */
export const WEB_ORIGINS_PATTERN = `^$|^${ORIGIN_PATTERN}(,${ORIGIN_PATTERN})*$`;

/** `alarmEmail`: empty (no subscription) or one address. */
export const ALARM_EMAIL_PATTERN = '^$|^[^\\s@,]+@[^\\s@,]+\\.[^\\s@,]+$';

/** `UnboundStorePurchases`: what becomes of a store purchase bound to no account. */
export const UNBOUND_PATTERN = '^(refuse|accept)$';

/** `EmailVerifiedClaim`: a claim name. */
export const EMAIL_VERIFIED_CLAIM_PATTERN = '^[A-Za-z0-9_:.-]{1,64}$';

/**
 * `CreditPacks`: NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID[:GOOGLE_PLAY_PRODUCT_ID]],
 * comma-separated (the App Store field may be empty before a Google Play one).
 */
const PACK_PATTERN =
  '[a-z0-9_-]+:[0-9]+:[0-9]+:[A-Za-z]{3}(:[A-Za-z0-9._-]{1,100}|:[A-Za-z0-9._-]{0,100}:[a-z0-9][a-z0-9._]{0,138})?';
export const CREDIT_PACKS_PATTERN = `^${PACK_PATTERN}(,${PACK_PATTERN})*$`;

/** App Store purchases' settings, only those given (none: App Store purchases are off). */
function appleValues(p: AtelierServiceProps): Record<string, () => string> {
  const values: Record<string, () => string> = {};
  if (p.appleRootCerts) values.ATELIER_APPLE_ROOT_CERTS = () => p.appleRootCerts!;
  if (p.appleBundleId) values.ATELIER_APPLE_BUNDLE_ID = () => p.appleBundleId!;
  if (p.appleEnvironment) values.ATELIER_APPLE_ENVIRONMENT = () => p.appleEnvironment!;
  if (p.appleAppAppleId !== undefined) values.ATELIER_APPLE_APP_APPLE_ID = () => String(p.appleAppAppleId);
  return values;
}

/** Google Play purchases' settings, only those given (none: Google Play is off). */
function googlePlayValues(p: AtelierServiceProps): Record<string, () => string> {
  const values: Record<string, () => string> = {};
  if (p.googlePlayPackageName) values.ATELIER_GOOGLE_PLAY_PACKAGE_NAME = () => p.googlePlayPackageName!;
  if (p.googlePlayPushAudience) values.ATELIER_GOOGLE_PLAY_PUSH_AUDIENCE = () => p.googlePlayPushAudience!;
  if (p.googlePlayPushServiceAccount) {
    values.ATELIER_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT = () => p.googlePlayPushServiceAccount!;
  }
  return values;
}

/** The CORS origin without a site: the local runner's web app (`cargo xtask dev`). */
export const DEV_WEB_ORIGIN = 'http://localhost:8787';

/** Routes that need no token (the router's public handlers). */
export const PUBLIC_ROUTES = ['/healthz', '/v1/styles', '/v1/openapi.json', '/v1/packs'] as const;

/**
 * POST routes without the JWT authorizer: the caller signs each request instead (Stripe, the
 * App Store; Google's Pub/Sub with its own OIDC token, which the API verifies).
 */
export const SIGNED_WEBHOOK_ROUTES = ['/v1/webhooks/stripe', '/v1/webhooks/apple', '/v1/webhooks/google'] as const;

/** Variables only the API gets: where the Stripe keys, the address key, the Google Play key and the App Store Server API key are (only it can read them). */
export const API_ONLY_ENV: ReadonlySet<string> = new Set([
  'ATELIER_STRIPE_SECRET_ID',
  'ATELIER_ADDRESS_KEY_SECRET_ID',
  'ATELIER_GOOGLE_PLAY_SECRET_ID',
  'ATELIER_APPLE_API_SECRET_ID',
]);

/** Settings only the sweeper is told: where the push credentials are (it alone sends pushes). */
export const SWEEPER_ONLY_ENV: ReadonlySet<string> = new Set(['ATELIER_PUSH_SECRET_ID']);

/**
 * An integer setting, or its default. A plain value outside `RANGES` fails the synth with the
 * setting's name; a token (a CloudFormation parameter) is left to the parameter's own range.
 */
function intSetting(name: IntSetting, value: number | undefined): number {
  const v = value ?? DEFAULTS[name];
  if (Token.isUnresolved(v)) return v;
  const { min, max } = RANGES[name] as { min: number; max?: number };
  if (!Number.isInteger(v) || v < min || (max !== undefined && v > max)) {
    throw new Error(`AtelierService: ${name} must be an integer in ${min}..${max ?? 'any'}, not ${v}`);
  }
  return v;
}

/** A plain string setting must match its pattern (CloudFormation's whole-value AllowedPattern). */
function checkPattern(name: string, value: string, pattern: string): string {
  if (!Token.isUnresolved(value) && !new RegExp(`^(?:${pattern})$`).test(value)) {
    throw new Error(`AtelierService: ${name} ${JSON.stringify(value)} does not match ${pattern}`);
  }
  return value;
}

/** `one_two` → `OneTwo` (construct ids of per-table and per-function resources). */
export function pascal(s: string): string {
  return s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}
