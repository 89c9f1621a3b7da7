/**
 * Atelier on AWS: three Lambda functions (API, consumer, sweeper), the DynamoDB tables of the
 * code's schema, the job queue and its dead-letter queue, the private assets bucket, the model
 * provider key, a JWT-authorised HTTP API, a one-minute sweep, and the alarms that watch money.
 *
 * Least privilege is written out per function in `grantData()` (no `grant*ReadWriteData`
 * helpers: they include DeleteItem and BatchWriteItem). The ledger is append-only: no role
 * gets UpdateItem or DeleteItem on it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import {
  Aws,
  CfnCondition,
  CfnOutput,
  CfnParameter,
  CfnResource,
  CfnRule,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  type StackProps,
  Tags,
  Token,
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
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

import { type EnvName, type EnvValues, functionEnvironment, loadEnvNames } from './environment';
import { LOGICAL_TABLE_METADATA, type TableDef, loadSchema } from './schema';
import { WebSite } from './web-site';
import { addWebhooks } from './webhooks';

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
  namespace: 'Atelier',
  /** Sweeper, every sweep: jobs it found stuck in `processing` (and failed + refunded). */
  jobsStuck: 'JobsStuck',
  /** Consumer, after each reservation/settlement: the UTC day's spend as a percent of the cap. */
  budgetUsedPercent: 'BudgetUsedPercent',
  /** Sweeper, every sweep: refunds it owed (dispatch limit, stuck job) and could not make. */
  refundsFailed: 'RefundsFailed',
  /** Every finished job, by `Outcome` and `FailureCode` (consumer, sweeper, API cancels). */
  jobsFinished: 'JobsFinished',
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

/**
 * Concurrency reserved for the sweeper (parameter `SweeperReservedConcurrency`): the function
 * that guarantees refunds is never throttled by API or consumer load. Sweeps are safe to
 * overlap; two covers one sweep running long while the next minute's starts.
 */
export const SWEEPER_RESERVED_CONCURRENCY = 2;

export interface AtelierStackProps extends StackProps {
  readonly stage: Stage;
  readonly arch?: Arch;
  /**
   * Folder holding `<function>/bootstrap.zip` for `arch` (what `cargo xtask package`
   * writes). Ignored when `placeholderCode` is set.
   * @default ../target/lambda-dist/<arch>
   */
  readonly distDir?: string;
  /**
   * Deploy a placeholder instead of the zips (tests and offline synth run without a 9-minute
   * release build). Never deploy this: every function would answer with an error.
   */
  readonly placeholderCode?: boolean;
  /** The tables (default: infra/schema.json). */
  readonly schema?: TableDef[];
  /** The environment variables the code reads (default: infra/env-names.json). */
  readonly envNames?: EnvName[];
  /**
   * Days before an object under `uploads/` expires. An upload is only needed until an edit is
   * submitted: the submit copies it into the edit's own prefix under `results/` (kept as long
   * as the result, so repairs never need the upload). @default 7
   */
  readonly uploadRetentionDays?: number;
  /**
   * Per-IP rate limit in front of the API: requests per client IP in any 5 minutes. Set, the
   * stack adds a CloudFront distribution in front of the HTTP API with an AWS WAF web ACL whose
   * rate-based rule blocks an IP past the limit (WAF cannot be associated with an HTTP API;
   * CloudFront-scoped WAF is created in us-east-1 only, which a template rule enforces).
   * Context `atelier:perIpRateLimit`. @default none (no distribution, no WAF)
   */
  readonly perIpRateLimit?: number;
  /**
   * Deploy the web app's site (private bucket + CloudFront). Off for the local cloud, whose
   * emulator has no CloudFront. Context `atelier:site`. @default true
   */
  readonly site?: boolean;
  /**
   * The built web app to upload into the site (`web/dist` after `npm run build`). Context
   * `atelier:webDist`. @default none: the site is created empty (upload with `aws s3 sync`)
   */
  readonly webDist?: string;
  /** API Gateway stage throttling. @default 25 requests/s steady, 50 burst */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
}

export class AtelierStack extends Stack {
  readonly tables: Record<string, dynamodb.Table> = {};
  readonly functions: Record<FunctionKey, lambda.Function>;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly bucket: s3.Bucket;
  readonly providerKey: secretsmanager.Secret;
  readonly stripeKeys: secretsmanager.Secret;
  readonly httpApi: apigw.HttpApi;
  readonly site?: WebSite;

  private readonly schemaDefs: TableDef[];
  /** Days the bucket keeps results/; the functions read the same value. */
  private resultRetention!: CfnParameter;

  constructor(scope: Construct, id: string, props: AtelierStackProps) {
    super(scope, id, {
      description: `Atelier (${props.stage}): paid AI photo edits — API, consumer, sweeper`,
      ...props,
    });
    const prod = props.stage === 'prod';
    const arch = props.arch ?? 'x86_64';
    const removalPolicy = prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = prod ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.TWO_WEEKS;
    this.schemaDefs = props.schema ?? loadSchema();
    const envNames = props.envNames ?? loadEnvNames();
    Tags.of(this).add('project', 'atelier');
    Tags.of(this).add('stage', props.stage);

    // ---------------------------------------------------------------- parameters
    const jwtIssuer = new CfnParameter(this, 'JwtIssuer', {
      type: 'String',
      default: '',
      description: 'OIDC issuer URL of the bearer tokens (https://…). Empty: the stack’s own Cognito user pool.',
      allowedPattern: `^$|${URL_PATTERN}`,
    });
    const jwtAudience = new CfnParameter(this, 'JwtAudience', {
      type: 'String',
      default: '',
      description: 'Audience (aud or client_id claim) the tokens must carry. Required with JwtIssuer; empty: the Cognito app client.',
    });
    const maxConcurrency = new CfnParameter(this, 'ConsumerMaxConcurrency', {
      type: 'Number',
      default: 2,
      minValue: 2,
      maxValue: 50,
      description: 'Most consumer instances at once (SQS event source maximum concurrency; 2 is the AWS minimum).',
    });
    const maxInFlight = new CfnParameter(this, 'MaxInFlight', {
      type: 'Number',
      default: 3,
      minValue: 1,
      maxValue: 100,
      description: 'Edits one user may have queued or processing at once.',
    });
    const sweeperReserved = new CfnParameter(this, 'SweeperReservedConcurrency', {
      type: 'Number',
      default: SWEEPER_RESERVED_CONCURRENCY,
      minValue: 0,
      maxValue: 10,
      description:
        'Concurrency reserved for the sweeper, so API load cannot throttle refunds. 0: none (only for accounts whose ' +
        'concurrency limit is 10, where AWS refuses any reservation; ask for the default 1000).',
    });
    const alarmEmail = new CfnParameter(this, 'AlarmEmail', {
      type: 'String',
      default: '',
      description: 'E-mail address subscribed to the alarm topic (empty: none; subscribe later).',
    });
    // Parameters only some code versions read are created on first use (see envValues()).
    const lazyParams = new Map<string, CfnParameter>();
    const lazyParam = (name: string, make: () => CfnParameter) => {
      let p = lazyParams.get(name);
      if (!p) {
        p = make();
        lazyParams.set(name, p);
      }
      return p;
    };

    const useCognito = new CfnCondition(this, 'UseCognito', {
      expression: Fn.conditionEquals(jwtIssuer.valueAsString, ''),
    });
    new CfnRule(this, 'AudienceGoesWithIssuer', {
      ruleCondition: Fn.conditionNot(Fn.conditionEquals(jwtIssuer.valueAsString, '')),
      assertions: [
        {
          assert: Fn.conditionNot(Fn.conditionEquals(jwtAudience.valueAsString, '')),
          assertDescription: 'JwtAudience is required when JwtIssuer is set',
        },
      ],
    });

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
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This is the dead-letter queue of JobsQueue; a DLQ of a DLQ would only hide messages further.',
    });

    // ---------------------------------------------------------------- bucket
    const uploadDays = props.uploadRetentionDays ?? 7;
    const resultRetention = (this.resultRetention = new CfnParameter(this, 'ResultRetentionDays', {
      type: 'Number',
      default: 90,
      minValue: 1,
      maxValue: 3650,
      description:
        'Days before an object under results/ (delivered images, repair candidates and the inputs each edit keeps for ' +
        'its repairs) expires; the functions read the same value (ATELIER_RESULT_RETENTION_DAYS), so a job whose ' +
        'images expired says so (images_expired_at) instead of handing out a dead link.',
    }));
    this.bucket = new s3.Bucket(this, 'Assets', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      lifecycleRules: [
        { id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        { id: 'expire-abandoned-uploads', prefix: 'uploads/', expiration: Duration.days(uploadDays) },
        { id: 'expire-results', prefix: 'results/', expiration: Duration.days(resultRetention.valueAsNumber) },
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

    // ---------------------------------------------------------------- functions
    const env = functionEnvironment(envNames, this.envValues(maxInFlight, lazyParam));
    // Only the consumer may read the provider key and only the API the Stripe keys, so only
    // they are told where each is.
    const envFor = (key: FunctionKey) =>
      Object.fromEntries(
        Object.entries(env).filter(
          ([k]) => (key === 'consumer' || !CONSUMER_ONLY_ENV.has(k)) && (key === 'api' || !API_ONLY_ENV.has(k)),
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
        code: this.code(name, arch, props),
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
    const reserveForSweeper = new CfnCondition(this, 'ReserveSweeperConcurrency', {
      expression: Fn.conditionNot(Fn.conditionEquals(sweeperReserved.valueAsString, '0')),
    });
    (sweeper.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = Token.asNumber(
      Fn.conditionIf(reserveForSweeper.logicalId, sweeperReserved.valueAsNumber, Aws.NO_VALUE),
    );

    this.grantData(api.role!, {
      accounts: ITEM_WRITE_READ,
      jobs: ITEM_WRITE_READ,
      ledger: LEDGER_ACTIONS,
      // The upload counters: one conditional UpdateItem per slot, nothing else.
      quotas: ['dynamodb:UpdateItem'],
      payments: ITEM_WRITE_READ,
    });
    // The API alone reads the Stripe keys (checkout and the webhook's signature check).
    api.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [this.stripeKeys.secretArn] }),
    );
    this.grantData(consumer.role!, {
      accounts: ITEM_WRITE_READ,
      jobs: ITEM_WRITE_READ,
      ledger: LEDGER_ACTIONS,
      budget: ITEM_WRITE_READ,
      attempts: ITEM_WRITE_READ,
    });
    this.grantData(sweeper.role!, {
      accounts: ITEM_WRITE_READ,
      jobs: ITEM_WRITE_READ,
      ledger: LEDGER_ACTIONS,
      budget: ITEM_WRITE_READ,
      attempts: ITEM_WRITE_READ,
    });
    // The API enqueues (the doorbell) and presigns: PUT into uploads/, GET/HEAD of objects;
    // a submit copies the edit's inputs into results/{user}/{job}/inputs/ (kept for repairs).
    this.queue.grantSendMessages(api);
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject'],
        resources: [this.bucket.arnForObjects('uploads/*'), this.bucket.arnForObjects('results/*/inputs/*')],
      }),
    );
    // Deletion (an upload, an edit's images, an account) removes and lists users' objects.
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:DeleteObject'],
        resources: [this.bucket.arnForObjects('uploads/*'), this.bucket.arnForObjects('results/*')],
      }),
    );
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': ['uploads/*', 'results/*'] } },
      }),
    );
    api.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects('*')] }),
    );
    // The consumer reads inputs and writes results, and alone reads the provider key.
    consumer.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [this.bucket.arnForObjects('*')],
      }),
    );
    consumer.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [this.providerKey.secretArn] }),
    );
    // The sweeper re-rings the doorbell; it never touches images.
    this.queue.grantSendMessages(sweeper);
    const objectsReason =
      'Object keys are per user and asset (uploads/{user}/{kind}/{asset}, results by job), so the bucket’s own objects ' +
      '(or the uploads/ prefix) are the narrowest fixed resource; the bucket is private and nothing else lives in it.';
    for (const f of [api, consumer]) {
      Validations.of(f.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${this.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/*]`,
        reason: objectsReason,
      });
    }
    for (const prefix of ['uploads/*', 'results/*', 'results/*/inputs/*']) {
      Validations.of(api.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${this.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/${prefix}]`,
        reason: objectsReason,
      });
    }

    // ---------------------------------------------------------------- queue → consumer
    consumer.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 1,
        maxConcurrency: maxConcurrency.valueAsNumber,
        reportBatchItemFailures: true,
      }),
    );

    // ---------------------------------------------------------------- schedule → sweeper
    sweeper.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    new events.Rule(this, 'SweepEveryMinute', {
      description: 'Run the sweeper once a minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(sweeper, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
    });

    // ---------------------------------------------------------------- identity (default issuer)
    const userPool = new cognito.UserPool(this, 'Users', {
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
    const issuer = Fn.conditionIf(
      useCognito.logicalId,
      `https://cognito-idp.${this.region}.amazonaws.com/${userPool.userPoolId}`,
      jwtIssuer.valueAsString,
    ).toString();

    // ---------------------------------------------------------------- web app and its origins
    const webOrigins = new CfnParameter(this, 'WebOrigins', {
      type: 'String',
      default: '',
      allowedPattern: `^$|^${ORIGIN_PATTERN}(,${ORIGIN_PATTERN})*$`,
      description:
        'Browser origins allowed to call the API and the storage (CORS), comma-separated, e.g. https://app.example.com. ' +
        `Empty: the web app's CloudFront domain (${DEV_WEB_ORIGIN} when the stack has no site).`,
    });
    if (props.site ?? true) {
      this.site = new WebSite(this, 'Web', {
        removalPolicy,
        webDist: props.webDist,
        // Wildcards, not the API's and issuer's own hosts: the API's CORS names this
        // distribution, so naming the API here would be a dependency cycle.
        connectSrc: [
          `https://*.execute-api.${this.region}.${this.urlSuffix}`,
          `https://cognito-idp.${this.region}.${this.urlSuffix}`,
          `https://*.auth.${this.region}.amazoncognito.com`,
          Fn.conditionIf(useCognito.logicalId, Aws.NO_VALUE, jwtIssuer.valueAsString).toString(),
        ],
      });
    }
    const defaultOrigin = this.site?.origin ?? DEV_WEB_ORIGIN;
    const allowedOrigins = Token.asList(
      Fn.conditionIf(
        new CfnCondition(this, 'DefaultWebOrigins', { expression: Fn.conditionEquals(webOrigins.valueAsString, '') })
          .logicalId,
        [defaultOrigin],
        Fn.split(',', webOrigins.valueAsString),
      ),
    );
    // The browser PUTs uploads and GETs results on presigned URLs; the signature (length and
    // type included) is the credential, CORS only decides which pages may read the answer.
    this.bucket.addCorsRule({
      allowedMethods: [s3.HttpMethods.PUT, s3.HttpMethods.GET, s3.HttpMethods.HEAD],
      allowedOrigins,
      allowedHeaders: ['content-type', 'content-length'],
      exposedHeaders: ['etag'],
      maxAge: 3600,
    });

    // The hosted UI: authorization code + PKCE back to the web app (no client secret), at the
    // first allowed origin.
    const appUrl = Fn.join('', [Fn.select(0, allowedOrigins), '/']);
    const userPoolClient = userPool.addClient('App', {
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
    const hostedUi = userPool.addDomain('HostedUi', {
      // Globally unique: stage and account (two stacks of one stage in one account would clash).
      cognitoDomain: { domainPrefix: `atelier-${props.stage}-${this.account}` },
    });
    for (const c of [userPool, userPoolClient, hostedUi]) {
      (c.node.defaultChild as CfnResource).cfnOptions.condition = useCognito;
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
    const audience = Fn.conditionIf(
      useCognito.logicalId,
      userPoolClient.userPoolClientId,
      jwtAudience.valueAsString,
    ).toString();

    // ---------------------------------------------------------------- HTTP API
    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: `Atelier API (${props.stage})`,
      createDefaultStage: false,
      // API Gateway answers preflights itself (before the JWT authorizer) for these.
      corsPreflight: {
        allowOrigins: allowedOrigins,
        allowMethods: [apigw.CorsHttpMethod.GET, apigw.CorsHttpMethod.POST, apigw.CorsHttpMethod.OPTIONS],
        allowHeaders: [...CORS_ALLOW_HEADERS],
        exposeHeaders: [...CORS_EXPOSE_HEADERS],
        allowCredentials: false,
        maxAge: Duration.hours(1),
      },
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logRetention, removalPolicy });
    const throttle = props.throttle ?? { rateLimit: 25, burstLimit: 50 };
    const stage = this.httpApi.addStage('DefaultStage', {
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
        reason: `POST ${path} is called by Stripe, which has no JWT: the function verifies the Stripe-Signature (HMAC of the raw body) and refuses every unsigned request.`,
      });
    }

    if (props.perIpRateLimit !== undefined) this.perIpFront(props.perIpRateLimit);

    // ---------------------------------------------------------------- alarms
    const alarmTopic = new sns.Topic(this, 'Alarms', { displayName: `Atelier ${props.stage} alarms`, enforceSSL: true });
    Validations.of(alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'Alarm notifications carry metric names and thresholds only. CloudWatch cannot publish to a topic under the AWS managed SNS key, ' +
        'and a customer managed key would cost more than the rest of this stack at rest.',
    });
    const hasEmail = new CfnCondition(this, 'HasAlarmEmail', {
      expression: Fn.conditionNot(Fn.conditionEquals(alarmEmail.valueAsString, '')),
    });
    const subscription = new sns.CfnSubscription(this, 'AlarmEmailSubscription', {
      topicArn: alarmTopic.topicArn,
      protocol: 'email',
      endpoint: alarmEmail.valueAsString,
    });
    subscription.cfnOptions.condition = hasEmail;
    const action = new SnsAction(alarmTopic);
    const alarm = (id: string, a: cloudwatch.AlarmProps) => {
      const made = new cloudwatch.Alarm(this, id, a);
      made.addAlarmAction(action);
      return made;
    };
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
    const webhooksDef = this.schemaDefs.find((d) => d.logical === 'webhooks');
    if (webhooksDef && this.tables.webhooks) {
      addWebhooks({
        table: this.tables.webhooks,
        dueIndex: webhooksDef.indexes[0]?.name ?? 'webhooks_due',
        writers: [api, consumer],
        sweeper,
        namespace: METRICS.namespace,
        alarm,
      });
    }
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
          'the sweeper has reserved concurrency, the others share the pool.',
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

    // ---------------------------------------------------------------- outputs
    new CfnOutput(this, 'ApiUrl', { value: stage.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'QueueUrl', { value: this.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'ProviderKeySecretArn', { value: this.providerKey.secretArn });
    new CfnOutput(this, 'StripeKeysSecretArn', { value: this.stripeKeys.secretArn });
    new CfnOutput(this, 'AlarmTopicArn', { value: alarmTopic.topicArn });
    for (const def of this.schemaDefs) {
      new CfnOutput(this, `${pascal(def.logical)}TableName`, {
        value: this.tables[def.logical]!.tableName,
        description: `${def.env} for operator tools (atelier-admin)`,
      });
    }
    new CfnOutput(this, 'UserPoolId', { value: userPool.userPoolId, condition: useCognito });
    new CfnOutput(this, 'UserPoolClientId', { value: userPoolClient.userPoolClientId, condition: useCognito });
    // What `npm run build` in web/ needs (README: "Deploy the web app").
    new CfnOutput(this, 'WebApiBaseUrl', {
      value: `https://${this.httpApi.apiId}.execute-api.${this.region}.${this.urlSuffix}`,
      description: 'VITE_API_BASE_URL for the web build',
    });
    // With JwtIssuer set, the operator's own issuer and audience are the web build's values.
    new CfnOutput(this, 'WebOidcAuthority', {
      value: `https://cognito-idp.${this.region}.amazonaws.com/${userPool.userPoolId}`,
      description: 'VITE_OIDC_AUTHORITY for the web build',
      condition: useCognito,
    });
    new CfnOutput(this, 'WebOidcClientId', {
      value: userPoolClient.userPoolClientId,
      description: 'VITE_OIDC_CLIENT_ID for the web build',
      condition: useCognito,
    });
    if (this.site) {
      new CfnOutput(this, 'WebUrl', { value: `${this.site.origin}/`, description: 'The web app' });
      new CfnOutput(this, 'WebBucketName', {
        value: this.site.bucket.bucketName,
        description: 'Bucket of the web app (cdk deploy uploads web/dist; or see infra/README.md)',
      });
      new CfnOutput(this, 'WebDistributionId', {
        value: this.site.distribution.distributionId,
        description: 'Invalidate after uploading by hand: aws cloudfront create-invalidation --paths "/*"',
      });
    }
  }

  /**
   * Per-IP limits in front of the API: WAF cannot be associated with an API Gateway HTTP API
   * (only REST APIs, CloudFront, ALB, AppSync, …), so a CloudFront distribution forwards
   * everything to the HTTP API uncached, and a CloudFront-scoped web ACL blocks an IP past
   * `limit` requests in 5 minutes. The HTTP API's own URL stays reachable: the limit binds
   * clients that use the published `ApiCdnUrl`; stage throttling still bounds the rest.
   */
  private perIpFront(limit: number): void {
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
    const apiHost = `${this.httpApi.apiId}.execute-api.${this.region}.${this.urlSuffix}`;
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
    new CfnOutput(this, 'ApiCdnUrl', {
      value: `https://${cdn.distributionDomainName}/`,
      description: 'Base URL of the API behind the per-IP rate limit (publish this one)',
    });
  }

  /**
   * Values for every environment variable the stack knows how to fill. The code decides which
   * are read (env-names.json); names that are not listed are not set.
   */
  private envValues(maxInFlight: CfnParameter, lazyParam: (n: string, m: () => CfnParameter) => CfnParameter): EnvValues {
    const values: Record<string, () => string> = {
      ATELIER_QUEUE_URL: () => this.queue.queueUrl,
      ATELIER_BUCKET: () => this.bucket.bucketName,
      ATELIER_MAX_IN_FLIGHT: () => maxInFlight.valueAsString,
      ATELIER_RESULT_RETENTION_DAYS: () => this.resultRetention.valueAsString,
      // Anticipated by the model and breaker work; set as soon as the code lists them.
      ATELIER_MODEL_BASE_URL: () =>
        lazyParam('ModelBaseUrl', () =>
          new CfnParameter(this, 'ModelBaseUrl', {
            type: 'String',
            default: 'https://api.openai.com',
            description: 'Base URL of the OpenAI-compatible model API.',
            allowedPattern: URL_PATTERN,
          }),
        ).valueAsString,
      ATELIER_MODEL_API_KEY_SECRET_ID: () => this.providerKey.secretArn,
      ATELIER_DAILY_CAP_MICROS: () =>
        lazyParam('DailyCapMicros', () =>
          new CfnParameter(this, 'DailyCapMicros', {
            type: 'Number',
            default: 20_000_000,
            minValue: 0,
            description:
              'Default daily model spend cap in micro-dollars (20000000 = 20 USD, the code default) for days the operator has ' +
              'not capped (atelier-admin budget set-cap overrides it). 0 refuses every paid call.',
          }),
        ).valueAsString,
      ATELIER_USER_DAILY_SHARE_MICROS: () =>
        lazyParam('UserDailyShareMicros', () =>
          new CfnParameter(this, 'UserDailyShareMicros', {
            type: 'Number',
            default: 3_000_000,
            minValue: 1,
            description:
              'Model spend one user may cause in a UTC day, refunded jobs included, in micro-dollars (3000000 = 3 USD, the ' +
              'code default); past it their submits are refused (429 DAILY_LIMIT_REACHED). atelier-admin budget share ' +
              'overrides it per user.',
          }),
        ).valueAsString,
      ATELIER_UPLOAD_SLOTS_PER_DAY: () =>
        lazyParam('UploadSlotsPerDay', () =>
          new CfnParameter(this, 'UploadSlotsPerDay', {
            type: 'Number',
            default: 150,
            minValue: 1,
            maxValue: 1_000_000,
            description: 'Upload slots one user may ask for per UTC day (150: 50 edits with original, mask and style reference).',
          }),
        ).valueAsString,
      ATELIER_UPLOAD_BYTES_PER_DAY: () =>
        lazyParam('UploadBytesPerDay', () =>
          new CfnParameter(this, 'UploadBytesPerDay', {
            type: 'Number',
            default: 1_073_741_824,
            minValue: 20_971_520,
            description: 'Declared bytes of uploads one user may ask for per UTC day (default 1 GiB; at least one 20 MiB photo).',
          }),
        ).valueAsString,
      ATELIER_EMAIL_VERIFIED_CLAIM: () =>
        lazyParam('EmailVerifiedClaim', () =>
          new CfnParameter(this, 'EmailVerifiedClaim', {
            type: 'String',
            default: 'email_verified',
            allowedPattern: '^[A-Za-z0-9_:.-]{1,64}$',
            description: 'Token claim saying the e-mail is verified (true); only such callers get the signup grant.',
          }),
        ).valueAsString,
      ATELIER_STRIPE_SECRET_ID: () => this.stripeKeys.secretArn,
      ATELIER_CREDIT_PACKS: () =>
        lazyParam('CreditPacks', () =>
          new CfnParameter(this, 'CreditPacks', {
            type: 'String',
            default: 'starter:50:500:usd,studio:250:2000:usd',
            description: 'Credit packs for sale: NAME:CREDITS:AMOUNT:CURRENCY, comma-separated, the amount in minor units (cents).',
            allowedPattern: '^[a-z0-9_-]+:[0-9]+:[0-9]+:[A-Za-z]{3}(,[a-z0-9_-]+:[0-9]+:[0-9]+:[A-Za-z]{3})*$',
          }),
        ).valueAsString,
      ATELIER_CHECKOUT_RETURN_URLS: () =>
        lazyParam('CheckoutReturnUrls', () =>
          new CfnParameter(this, 'CheckoutReturnUrls', {
            type: 'String',
            default: 'http://localhost:8787/',
            description:
              "URL prefixes a checkout's success and cancel URLs must start with (comma-separated; the first is the default): your web app's origin, e.g. https://app.example.com/.",
          }),
        ).valueAsString,
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
  private grantData(role: iam.IRole, grants: Record<string, readonly string[]>): void {
    for (const [logical, actions] of Object.entries(grants)) {
      const table = this.tables[logical];
      const def = this.schemaDefs.find((d) => d.logical === logical);
      if (!table || !def) throw new Error(`grantData: no table ${logical} in the schema`);
      const resources = [table.tableArn];
      if (actions.includes('dynamodb:Query')) {
        for (const i of def.indexes) resources.push(`${table.tableArn}/index/${i.name}`);
      }
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...actions], resources }));
    }
  }

  private code(name: string, arch: Arch, props: AtelierStackProps): lambda.Code {
    if (props.placeholderCode) return lambda.Code.fromAsset(join(__dirname, '..', 'assets', 'placeholder'));
    const dist = props.distDir ?? join(__dirname, '..', '..', 'target', 'lambda-dist', arch);
    const zip = join(dist, name, 'bootstrap.zip');
    if (!existsSync(zip)) {
      throw new Error(
        `${zip} is missing: run \`cargo xtask package${arch === 'arm64' ? ' --arch arm64' : ''}\` first ` +
          '(or synthesize with --context atelier:placeholderCode=true to check the template only)',
      );
    }
    return lambda.Code.fromAsset(zip);
  }
}

/**
 * Item-level rights for tables whose items move inside transactions. TransactWriteItems has
 * no IAM action of its own: each item in it is authorised as its own Put/Update/ConditionCheck.
 * No DeleteItem, no Scan, no batch writes.
 */
export const ITEM_WRITE_READ = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:ConditionCheckItem',
] as const;

/** The ledger is append-only (docs/design.md rule 3): put, read, and nothing that updates or deletes. */
export const LEDGER_ACTIONS = ['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:Query'] as const;

const PLUS_PLAN_REASON =
  'Threat protection needs the Cognito Plus plan, billed per monthly active user; the default issuer is a starting point, ' +
  'and production may bring its own issuer (JwtIssuer) or turn the plan on when sign-up abuse shows.';

/** Variables only the consumer gets: where the model provider key is (only it can read it). */
export const CONSUMER_ONLY_ENV: ReadonlySet<string> = new Set(['ATELIER_MODEL_API_KEY_SECRET_ID']);

/**
 * Allowed values of the URL parameters (`JwtIssuer`, `ModelBaseUrl`): https, or plain http on
 * the loopback only. The local cloud (`cargo xtask cloud`) deploys this same template with the
 * dev issuer and the stand-in model on 127.0.0.1; a function in AWS cannot reach a loopback
 * address, so the exception admits nothing in a real account.
 */
export const URL_PATTERN = '^https://\\S+$|^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/\\S*)?$';

/** A browser origin: https, or http on the loopback (local development). */
export const ORIGIN_PATTERN = '(https://[A-Za-z0-9.-]+(:[0-9]{1,5})?|http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?)';

/** The CORS origin without a site: the local runner's web app (`cargo xtask dev`). */
export const DEV_WEB_ORIGIN = 'http://localhost:8787';

/** Request headers the web app sends (CORS preflight allows exactly these). */
export const CORS_ALLOW_HEADERS = ['authorization', 'content-type', 'idempotency-key', 'prefer', 'if-none-match'] as const;

/** Response headers the web app reads. */
export const CORS_EXPOSE_HEADERS = ['location', 'retry-after', 'idempotent-replayed', 'etag'] as const;

/** Routes that need no token (the router's public handlers). */
export const PUBLIC_ROUTES = ['/healthz', '/v1/styles', '/v1/openapi.json', '/v1/packs'] as const;

/** POST routes without the JWT authorizer: the caller (Stripe) signs each request instead. */
export const SIGNED_WEBHOOK_ROUTES = ['/v1/webhooks/stripe'] as const;

/** Variables only the API gets: where the Stripe keys are (only it can read them). */
export const API_ONLY_ENV: ReadonlySet<string> = new Set(['ATELIER_STRIPE_SECRET_ID']);

function pascal(s: string): string {
  return s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}
