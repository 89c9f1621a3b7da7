/**
 * Queue rights written out, not CDK's `grantSendMessages`/`SqsEventSource` (they add
 * `sqs:GetQueueUrl` and, for sending, `sqs:GetQueueAttributes`: the functions take their queue
 * URLs from the environment and call neither). Keep in step with `../terraform/iam.tf` and
 * `../terraform/webhooks.tf`.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

/** What a function's code does with a queue it rings: SendMessage, nothing else. */
export function allowSend(fn: lambda.Function, queue: sqs.IQueue): void {
  fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }));
}

/** What Lambda's SQS event source needs of the function's role (AWS's list for SQS mappings). */
export const EVENT_SOURCE_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'] as const;

export interface ConsumeOptions {
  batchSize: number;
  maxConcurrency?: number;
}

/**
 * Feeds `queue` to `fn` with partial batch failures, granting the mapping its actions on the
 * function's default policy (which the function, and so the mapping, depends on).
 */
export function consume(fn: lambda.Function, id: string, queue: sqs.IQueue, o: ConsumeOptions): lambda.EventSourceMapping {
  fn.addToRolePolicy(new iam.PolicyStatement({ actions: [...EVENT_SOURCE_ACTIONS], resources: [queue.queueArn] }));
  return fn.addEventSourceMapping(id, {
    eventSourceArn: queue.queueArn,
    batchSize: o.batchSize,
    maxConcurrency: o.maxConcurrency,
    reportBatchItemFailures: true,
  });
}
