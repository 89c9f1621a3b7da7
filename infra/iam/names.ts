/**
 * The names the IAM check gives the deployed resources, the same whatever deployed them: a
 * table is `arn:aws:dynamodb:us-east-1:000000000000:table/<logical>`, the assets bucket
 * `arn:aws:s3:::assets`, the job queue `…:jobs`, a function `…:function:<api|consumer|sweeper>`.
 * The template's intrinsics, the Terraform module's resources and the physical names a recording
 * saw are all mapped onto these, so a recorded call and a policy's resource compare as AWS would
 * compare them on one deployment.
 */
import { FUNCTIONS, type FunctionKey, pascal } from '../lib/atelier-service';
import { type TableDef } from '../lib/schema';

export const REGION = 'us-east-1';
export const ACCOUNT = '000000000000';
export const FUNCTION_KEYS = Object.keys(FUNCTIONS) as FunctionKey[];

export const arn = {
  table: (logical: string) => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${logical}`,
  stream: (logical: string) => `${arn.table(logical)}/stream/local`,
  bucket: (name: string) => `arn:aws:s3:::${name}`,
  queue: (name: string) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`,
  secret: (name: string) => `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}`,
  function: (key: string) => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${key}`,
  /** As `Fn::GetAtt [LogGroup, Arn]` answers: with `:*`. */
  logGroup: (key: string) => `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:/aws/lambda/${key}:*`,
  /** The session a function's calls are made as. */
  session: (key: string) => `arn:aws:sts::${ACCOUNT}:assumed-role/${key}-role/${key}`,
};

export type Service = 'dynamodb' | 's3' | 'sqs' | 'secretsmanager' | 'lambda';

/** Physical name (or ARN) → the check's name, by service. */
export type Names = Partial<Record<Service, Record<string, string>>>;

/** What a stack output names: the service and the check's name for it. */
export function outputRole(key: string, schema: readonly TableDef[]): { service: Service; name: string } | undefined {
  const fixed: Record<string, { service: Service; name: string }> = {
    QueueUrl: { service: 'sqs', name: 'jobs' },
    DeadLetterQueueUrl: { service: 'sqs', name: 'dead-letter' },
    WebhookQueueUrl: { service: 'sqs', name: 'webhooks' },
    BucketName: { service: 's3', name: 'assets' },
    ProviderKeySecretArn: { service: 'secretsmanager', name: 'model-provider-key' },
    GeminiKeySecretArn: { service: 'secretsmanager', name: 'gemini-key' },
    SigningKeySecretArn: { service: 'secretsmanager', name: 'signing-key' },
    StripeKeysSecretArn: { service: 'secretsmanager', name: 'stripe-keys' },
    PushKeysSecretArn: { service: 'secretsmanager', name: 'push-keys' },
    GooglePlayKeySecretArn: { service: 'secretsmanager', name: 'google-play-key' },
    AppleApiKeySecretArn: { service: 'secretsmanager', name: 'apple-api-key' },
    AddressKeySecretArn: { service: 'secretsmanager', name: 'address-key' },
  };
  if (fixed[key]) return fixed[key];
  const table = schema.find((d) => `${pascal(d.logical)}TableName` === key);
  return table ? { service: 'dynamodb', name: table.logical } : undefined;
}

/** The names of a deployed stack, from its outputs (`cdk deploy --outputs-file`). */
export function namesFromOutputs(outputs: Record<string, string>, schema: readonly TableDef[]): Names {
  const names: Names = {};
  for (const [key, value] of Object.entries(outputs)) {
    const role = outputRole(key, schema);
    if (!role) continue;
    // A queue is named by its URL's last segment.
    const physical = role.service === 'sqs' ? value.replace(/\/+$/, '').split('/').pop()! : value;
    (names[role.service] ??= {})[physical] = role.name;
  }
  return names;
}

export function mergeNames(into: Names, from: Names): Names {
  for (const [service, map] of Object.entries(from) as [Service, Record<string, string>][]) {
    Object.assign((into[service] ??= {}), map);
  }
  return into;
}

/** A recorded resource ARN with the physical name replaced by the check's (unknown names stay). */
export function canonicalArn(resource: string, names: Names): string {
  const parts = resource.split(':');
  const service = parts[2] as Service;
  const map = names[service] ?? {};
  switch (service) {
    case 'dynamodb': {
      const m = /^table\/([^/]+)(\/.*)?$/.exec(parts.slice(5).join(':'));
      if (!m) return resource;
      const logical = map[m[1]!];
      return logical ? arn.table(logical) + (m[2] ?? '') : resource;
    }
    case 's3': {
      const path = parts.slice(5).join(':');
      const slash = path.indexOf('/');
      const bucket = slash < 0 ? path : path.slice(0, slash);
      const name = map[bucket];
      return name ? arn.bucket(name) + (slash < 0 ? '' : path.slice(slash)) : resource;
    }
    case 'sqs': {
      const name = map[parts[5] ?? ''];
      return name ? arn.queue(name) : resource;
    }
    case 'secretsmanager': {
      const id = parts.slice(6).join(':');
      const name = map[resource] ?? map[id];
      return name ? arn.secret(name) : resource;
    }
    case 'lambda': {
      const name = map[parts[6] ?? ''];
      return name ? arn.function(name) : resource;
    }
    default:
      return resource;
  }
}
