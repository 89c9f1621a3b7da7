/**
 * The ready-made deployment: one stack holding one `AtelierService` (atelier-service.ts), whose
 * settings are this stack's CloudFormation parameters, and the stack's outputs.
 *
 * The service is instantiated with the id `Default`, which CDK leaves out of logical ids: every
 * resource keeps the logical id it had when this stack built the resources itself, so an
 * existing deployment updates in place (infra/README.md: "Atelier in your own CDK app").
 */
import { join } from 'node:path';

import { CfnOutput, CfnParameter, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

import {
  AtelierService,
  type AtelierServiceProps,
  CREDIT_PACKS_PATTERN,
  DEFAULTS,
  DEV_WEB_ORIGIN,
  EMAIL_VERIFIED_CLAIM_PATTERN,
  type FunctionKey,
  JWT_ISSUER_PATTERN,
  RANGES,
  PROVIDERS_PATTERN,
  URL_PATTERN,
  WEB_ORIGINS_PATTERN,
  pascal,
} from './atelier-service';
import type { WebSite } from './web-site';
import { type Serves, loadModels, usableModels, utcToday } from './models';

// Everything the stack's users imported from here before the service had a file of its own.
export * from './atelier-service';

/** The settings that are not CloudFormation parameters (the CDK app's context sets some). */
export type AtelierStackProps = StackProps &
  Pick<
    AtelierServiceProps,
    | 'stage'
    | 'arch'
    | 'distDir'
    | 'placeholderCode'
    | 'schema'
    | 'envNames'
    | 'uploadRetentionDays'
    | 'perIpRateLimit'
    | 'site'
    | 'webDist'
    | 'throttle'
    | 'appleRootCerts'
    | 'appleBundleId'
    | 'appleEnvironment'
    | 'appleAppAppleId'
    | 'googlePlayPackageName'
    | 'googlePlayPushAudience'
    | 'googlePlayPushServiceAccount'
  >;

export class AtelierStack extends Stack {
  readonly service: AtelierService;
  readonly tables: Record<string, dynamodb.Table>;
  readonly functions: Record<FunctionKey, lambda.Function>;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly bucket: s3.Bucket;
  readonly providerKey: secretsmanager.Secret;
  readonly stripeKeys: secretsmanager.Secret;
  /** The key of the signup grant's address hashes. */
  readonly addressKey: secretsmanager.Secret;
  readonly httpApi: apigw.HttpApi;
  readonly site?: WebSite;

  constructor(scope: Construct, id: string, props: AtelierStackProps) {
    super(scope, id, {
      description: `Atelier (${props.stage}): paid AI photo edits — API, consumer, sweeper`,
      ...props,
    });
    Tags.of(this).add('project', 'atelier');
    Tags.of(this).add('stage', props.stage);

    // ---------------------------------------------------------------- parameters
    const jwtIssuer = new CfnParameter(this, 'JwtIssuer', {
      type: 'String',
      default: '',
      description: 'OIDC issuer URL of the bearer tokens (https://…). Empty: the stack’s own Cognito user pool.',
      allowedPattern: JWT_ISSUER_PATTERN,
    });
    const jwtAudience = new CfnParameter(this, 'JwtAudience', {
      type: 'String',
      default: '',
      description: 'Audience (aud or client_id claim) the tokens must carry. Required with JwtIssuer; empty: the Cognito app client.',
    });
    const maxConcurrency = new CfnParameter(this, 'ConsumerMaxConcurrency', {
      type: 'Number',
      default: DEFAULTS.consumerMaxConcurrency,
      minValue: RANGES.consumerMaxConcurrency.min,
      maxValue: RANGES.consumerMaxConcurrency.max,
      description: 'Most consumer instances at once (SQS event source maximum concurrency; 2 is the AWS minimum).',
    });
    const maxInFlight = new CfnParameter(this, 'MaxInFlight', {
      type: 'Number',
      default: DEFAULTS.maxInFlight,
      minValue: RANGES.maxInFlight.min,
      maxValue: RANGES.maxInFlight.max,
      description: 'Edits one user may have queued or processing at once.',
    });
    const sweeperReserved = new CfnParameter(this, 'SweeperReservedConcurrency', {
      type: 'Number',
      default: DEFAULTS.sweeperReservedConcurrency,
      minValue: RANGES.sweeperReservedConcurrency.min,
      maxValue: RANGES.sweeperReservedConcurrency.max,
      description:
        'Concurrency reserved for the sweeper, so API load cannot throttle refunds; the webhook delivery queue takes up ' +
        'to 8 of it. 0: none (only for accounts whose ' +
        'concurrency limit is 10, where AWS refuses any reservation; ask for the default 1000).',
    });
    const consumerReserved = new CfnParameter(this, 'ConsumerReservedConcurrency', {
      type: 'Number',
      default: DEFAULTS.consumerReservedConcurrency,
      minValue: RANGES.consumerReservedConcurrency.min,
      maxValue: RANGES.consumerReservedConcurrency.max,
      description:
        'Concurrency reserved for the consumer, so API load (long-polls included) cannot throttle paid jobs. 0 or at least ' +
        'ConsumerMaxConcurrency; 0: none (only for accounts whose concurrency limit is 10).',
    });
    const apiReserved = new CfnParameter(this, 'ApiReservedConcurrency', {
      type: 'Number',
      default: DEFAULTS.apiReservedConcurrency,
      minValue: RANGES.apiReservedConcurrency.min,
      maxValue: RANGES.apiReservedConcurrency.max,
      description:
        'Concurrency reserved for the API, which is also the most API instances at once. 0: none (the API shares the ' +
        "account's unreserved pool, bounded by stage throttling).",
    });
    const alarmEmail = new CfnParameter(this, 'AlarmEmail', {
      type: 'String',
      default: '',
      description: 'E-mail address subscribed to the alarm topic (empty: none; subscribe later).',
    });
    const resultRetention = new CfnParameter(this, 'ResultRetentionDays', {
      type: 'Number',
      default: DEFAULTS.resultRetentionDays,
      minValue: RANGES.resultRetentionDays.min,
      maxValue: RANGES.resultRetentionDays.max,
      description:
        'Days before an object under results/ (delivered images, repair candidates and the inputs each edit keeps for ' +
        'its repairs) expires; the functions read the same value (ATELIER_RESULT_RETENTION_DAYS), so a job whose ' +
        'images expired says so (images_expired_at) instead of handing out a dead link.',
    });
    const webOrigins = new CfnParameter(this, 'WebOrigins', {
      type: 'String',
      default: '',
      allowedPattern: WEB_ORIGINS_PATTERN,
      description:
        'Browser origins allowed to call the API and the storage (CORS), comma-separated, e.g. https://app.example.com. ' +
        `Empty: the web app's CloudFront domain (${DEV_WEB_ORIGIN} when the stack has no site).`,
    });
    // Parameters only some code versions read are created on first use: the service reads
    // each of these settings only when the code lists its variable (env-names.json), so each
    // getter below runs, and makes its parameter, only then.
    const lazyParams = new Map<string, CfnParameter>();
    const lazyParam = (name: string, make: () => CfnParameter) => {
      let p = lazyParams.get(name);
      if (!p) {
        p = make();
        lazyParams.set(name, p);
      }
      return p;
    };
    const stack = this;

    this.service = new AtelierService(this, 'Default', {
      stage: props.stage,
      arch: props.arch,
      // This app is the repository's: its zips are where `cargo xtask package` writes them.
      distDir: props.distDir ?? join(__dirname, '..', '..', 'target', 'lambda-dist', props.arch ?? 'x86_64'),
      placeholderCode: props.placeholderCode,
      schema: props.schema,
      envNames: props.envNames,
      uploadRetentionDays: props.uploadRetentionDays,
      perIpRateLimit: props.perIpRateLimit,
      site: props.site,
      webDist: props.webDist,
      throttle: props.throttle,
      appleRootCerts: props.appleRootCerts,
      appleBundleId: props.appleBundleId,
      appleEnvironment: props.appleEnvironment,
      appleAppAppleId: props.appleAppAppleId,
      googlePlayPackageName: props.googlePlayPackageName,
      googlePlayPushAudience: props.googlePlayPushAudience,
      googlePlayPushServiceAccount: props.googlePlayPushServiceAccount,
      jwtIssuer: jwtIssuer.valueAsString,
      jwtAudience: jwtAudience.valueAsString,
      consumerMaxConcurrency: maxConcurrency.valueAsNumber,
      maxInFlight: maxInFlight.valueAsNumber,
      sweeperReservedConcurrency: sweeperReserved.valueAsNumber,
      consumerReservedConcurrency: consumerReserved.valueAsNumber,
      apiReservedConcurrency: apiReserved.valueAsNumber,
      alarmEmail: alarmEmail.valueAsString,
      resultRetentionDays: resultRetention.valueAsNumber,
      webOrigins: webOrigins.valueAsString,
      // Anticipated by the model and breaker work; set as soon as the code lists them.
      get modelBaseUrl() {
        return lazyParam('ModelBaseUrl', () =>
          new CfnParameter(stack, 'ModelBaseUrl', {
            type: 'String',
            default: DEFAULTS.modelBaseUrl,
            description: 'Base URL of the OpenAI-compatible model API.',
            allowedPattern: URL_PATTERN,
          }),
        ).valueAsString;
      },
      // Failover order per call kind (docs/design.md rule 15); OpenAI alone by default.
      get editProviders() {
        return lazyParam('EditProviders', () =>
          new CfnParameter(stack, 'EditProviders', {
            type: 'String',
            default: DEFAULTS.editProviders,
            description: 'Providers of the edit in failover order: openai, gemini, openai,gemini or gemini,openai.',
            allowedPattern: PROVIDERS_PATTERN,
          }),
        ).valueAsString;
      },
      get visionProviders() {
        return lazyParam('VisionProviders', () =>
          new CfnParameter(stack, 'VisionProviders', {
            type: 'String',
            default: DEFAULTS.visionProviders,
            description: 'Providers of the readiness check, review and comparison in failover order (as EditProviders).',
            allowedPattern: PROVIDERS_PATTERN,
          }),
        ).valueAsString;
      },
      get geminiBaseUrl() {
        return lazyParam('GeminiBaseUrl', () =>
          new CfnParameter(stack, 'GeminiBaseUrl', {
            type: 'String',
            default: DEFAULTS.geminiBaseUrl,
            description: 'Base URL of the Gemini API (used only when a provider list names gemini).',
            allowedPattern: URL_PATTERN,
          }),
        ).valueAsString;
      },
      // The models: CloudFormation allows only the catalogue's ids usable on the synth day.
      get imageModel() {
        return lazyParam('ImageModel', () => modelParameter(stack, 'ImageModel', 'edit')).valueAsString;
      },
      get visionModel() {
        return lazyParam('VisionModel', () => modelParameter(stack, 'VisionModel', 'vision')).valueAsString;
      },
      get dailyCapMicros() {
        return lazyParam('DailyCapMicros', () =>
          new CfnParameter(stack, 'DailyCapMicros', {
            type: 'Number',
            default: DEFAULTS.dailyCapMicros,
            minValue: RANGES.dailyCapMicros.min,
            description:
              'Default daily model spend cap in micro-dollars (20000000 = 20 USD, the code default) for days the operator has ' +
              'not capped (atelier-admin budget set-cap overrides it). 0 refuses every paid call.',
          }),
        ).valueAsNumber;
      },
      get userDailyShareMicros() {
        return lazyParam('UserDailyShareMicros', () =>
          new CfnParameter(stack, 'UserDailyShareMicros', {
            type: 'Number',
            default: DEFAULTS.userDailyShareMicros,
            minValue: RANGES.userDailyShareMicros.min,
            description:
              'Model spend one user may cause in a UTC day, refunded jobs included, in micro-dollars (3000000 = 3 USD, the ' +
              'code default); past it their submits are refused (429 DAILY_LIMIT_REACHED). atelier-admin budget share ' +
              'overrides it per user.',
          }),
        ).valueAsNumber;
      },
      get uploadSlotsPerDay() {
        return lazyParam('UploadSlotsPerDay', () =>
          new CfnParameter(stack, 'UploadSlotsPerDay', {
            type: 'Number',
            default: DEFAULTS.uploadSlotsPerDay,
            minValue: RANGES.uploadSlotsPerDay.min,
            maxValue: RANGES.uploadSlotsPerDay.max,
            description: 'Upload slots one user may ask for per UTC day (150: 50 edits with original, mask and style reference).',
          }),
        ).valueAsNumber;
      },
      get requestsPerWindow() {
        return lazyParam('RequestsPerWindow', () =>
          new CfnParameter(stack, 'RequestsPerWindow', {
            type: 'Number',
            default: DEFAULTS.requestsPerWindow,
            minValue: RANGES.requestsPerWindow.min,
            maxValue: RANGES.requestsPerWindow.max,
            description: 'API requests one signed-in caller may make per window, across every instance; past it 429 TOO_MANY_REQUESTS.',
          }),
        ).valueAsNumber;
      },
      get requestWindowSecs() {
        return lazyParam('RequestWindowSecs', () =>
          new CfnParameter(stack, 'RequestWindowSecs', {
            type: 'Number',
            default: DEFAULTS.requestWindowSecs,
            minValue: RANGES.requestWindowSecs.min,
            maxValue: RANGES.requestWindowSecs.max,
            description: 'The length of the per-caller request window, in seconds.',
          }),
        ).valueAsNumber;
      },
      get uploadBytesPerDay() {
        return lazyParam('UploadBytesPerDay', () =>
          new CfnParameter(stack, 'UploadBytesPerDay', {
            type: 'Number',
            default: DEFAULTS.uploadBytesPerDay,
            minValue: RANGES.uploadBytesPerDay.min,
            description: 'Declared bytes of uploads one user may ask for per UTC day (default 1 GiB; at least one 20 MiB photo).',
          }),
        ).valueAsNumber;
      },
      get emailVerifiedClaim() {
        return lazyParam('EmailVerifiedClaim', () =>
          new CfnParameter(stack, 'EmailVerifiedClaim', {
            type: 'String',
            default: DEFAULTS.emailVerifiedClaim,
            allowedPattern: EMAIL_VERIFIED_CLAIM_PATTERN,
            description: 'Token claim saying the e-mail is verified (true); only such callers get the signup grant.',
          }),
        ).valueAsString;
      },
      get unboundStorePurchases() {
        return lazyParam('UnboundStorePurchases', () =>
          new CfnParameter(stack, 'UnboundStorePurchases', {
            type: 'String',
            default: DEFAULTS.unboundStorePurchases,
            allowedValues: ['refuse', 'accept'],
            description:
              'refuse: an App Store or Google Play purchase bought without the account token is refused (403 PURCHASE_NOT_BOUND); accept: granted to whoever posts it first (docs/mobile.md: the risk).',
          }),
        ).valueAsString as 'refuse' | 'accept';
      },
      get creditPacks() {
        return lazyParam('CreditPacks', () =>
          new CfnParameter(stack, 'CreditPacks', {
            type: 'String',
            default: DEFAULTS.creditPacks,
            description:
              'Credit packs for sale: NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID], comma-separated, the amount in minor units (cents).',
            allowedPattern: CREDIT_PACKS_PATTERN,
          }),
        ).valueAsString;
      },
      get checkoutReturnUrls() {
        return lazyParam('CheckoutReturnUrls', () =>
          new CfnParameter(stack, 'CheckoutReturnUrls', {
            type: 'String',
            default: DEFAULTS.checkoutReturnUrls,
            description:
              "URL prefixes a checkout's success and cancel URLs must start with (comma-separated; the first is the default): your web app's origin, e.g. https://app.example.com/.",
          }),
        ).valueAsString;
      },
    });
    const service = this.service;
    this.tables = service.tables;
    this.functions = service.functions;
    this.queue = service.queue;
    this.deadLetterQueue = service.deadLetterQueue;
    this.bucket = service.bucket;
    this.providerKey = service.providerKey;
    this.stripeKeys = service.stripeKeys;
    this.addressKey = service.addressKey;
    this.httpApi = service.httpApi;
    this.site = service.site;

    // ---------------------------------------------------------------- outputs
    // The issuer is a parameter, so the pool always exists in the template, under useCognito.
    const userPool = service.userPool!;
    const userPoolClient = service.userPoolClient!;
    const useCognito = service.useCognito;
    new CfnOutput(this, 'ApiUrl', { value: service.apiUrl, description: 'Base URL of the HTTP API' });
    if (service.apiFront) {
      new CfnOutput(this, 'ApiCdnUrl', {
        value: `https://${service.apiFront.distributionDomainName}/`,
        description: 'Base URL of the API behind the per-IP rate limit (publish this one)',
      });
    }
    new CfnOutput(this, 'QueueUrl', { value: this.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'WebhookQueueUrl', {
      value: service.webhookQueue.queueUrl,
      description: 'The webhook delivery queue (one message per event and endpoint; the sweeper consumes it)',
    });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'ProviderKeySecretArn', { value: this.providerKey.secretArn });
    new CfnOutput(this, 'GeminiKeySecretArn', { value: service.geminiKey.secretArn });
    new CfnOutput(this, 'SigningKeySecretArn', { value: service.signingKey.secretArn });
    new CfnOutput(this, 'StripeKeysSecretArn', { value: this.stripeKeys.secretArn });
    new CfnOutput(this, 'PushKeysSecretArn', { value: service.pushKeys.secretArn });
    new CfnOutput(this, 'GooglePlayKeySecretArn', { value: service.googlePlayKey.secretArn });
    new CfnOutput(this, 'AppleApiKeySecretArn', { value: service.appleApiKey.secretArn });
    new CfnOutput(this, 'AddressKeySecretArn', { value: this.addressKey.secretArn });
    new CfnOutput(this, 'AlarmTopicArn', { value: service.alarmTopic.topicArn });
    for (const def of service.schemaDefs) {
      new CfnOutput(this, `${pascal(def.logical)}TableName`, {
        value: this.tables[def.logical]!.tableName,
        description: `${def.env} for operator tools (atelier-admin)`,
      });
    }
    new CfnOutput(this, 'UserPoolId', { value: userPool.userPoolId, condition: useCognito });
    new CfnOutput(this, 'UserPoolClientId', { value: userPoolClient.userPoolClientId, condition: useCognito });
    // What `npm run build` in web/ needs (README: "Deploy the web app").
    // With the per-IP front the web build talks to CloudFront, so its limit applies to it.
    new CfnOutput(this, 'WebApiBaseUrl', {
      value: service.apiFront
        ? `https://${service.apiFront.distributionDomainName}`
        : `https://${this.httpApi.apiId}.execute-api.${this.region}.${this.urlSuffix}`,
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
}

/**
 * A model parameter: the catalogue's default, and only the ids that can serve `serves` today
 * (infra/models.json), so CloudFormation refuses a shut-down or unknown model at deploy.
 */
function modelParameter(stack: Stack, id: string, serves: Serves): CfnParameter {
  const catalogue = loadModels();
  return new CfnParameter(stack, id, {
    type: 'String',
    default: serves === 'edit' ? catalogue.defaults.image : catalogue.defaults.vision,
    allowedValues: usableModels(catalogue, serves, utcToday()),
    description:
      `The ${serves === 'edit' ? 'edit' : 'vision (readiness check, review, comparison)'} model: a model of the code's catalogue ` +
      'not past its provider\'s shutdown (infra/models.json; prices in docs/costs.md).',
  });
}
