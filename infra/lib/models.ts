/**
 * The models a deployment may name, from ONE table: the code's model catalogue
 * (shared/src/domain/catalogue.rs, `atelier-admin models`, committed as `infra/models.json` and
 * drift-checked by `cargo xtask infra-test`). A model that is not in it, cannot serve its calls,
 * or is past its provider's shutdown date is refused here at synth (plain values) or by
 * CloudFormation (the ready-made stack's parameters allow only the usable ids), as the
 * consumer refuses it at cold start. Also the two alarms of the model's lifecycle: the daily
 * days-to-shutdown gauge (30 days ahead) and the provider's "no such model" answers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Duration, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';

export type Serves = 'edit' | 'vision';

export interface CatalogueModel {
  readonly provider: string;
  readonly id: string;
  readonly serves: Serves;
  /** `YYYY-MM-DD`, the provider's announced shutdown; null when none is announced. */
  readonly shutdown: string | null;
}

export interface ModelCatalogue {
  readonly defaults: { readonly image: string; readonly vision: string };
  readonly shutdown_warning_days: number;
  readonly metrics: {
    readonly namespace: string;
    readonly days_to_shutdown: string;
    readonly model_unavailable: string;
    readonly provider_breaker: string;
    readonly no_shutdown_days: number;
  };
  /** Every model provider, each with its own circuit breaker (docs/design.md rule 15). */
  readonly providers: readonly string[];
  readonly models: readonly CatalogueModel[];
}

export const MODELS_PATH = join(__dirname, '..', 'models.json');

export function loadModels(path: string = MODELS_PATH): ModelCatalogue {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as ModelCatalogue;
  if (!Array.isArray(parsed.models) || !parsed.defaults || !parsed.metrics) {
    throw new Error(`${path}: expected the output of atelier-admin models`);
  }
  return parsed;
}

/** Today as the catalogue writes dates (UTC). */
export function utcToday(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/** Ids that can serve `serves` on `today` (what a parameter may take). */
export function usableModels(catalogue: ModelCatalogue, serves: Serves, today: string): string[] {
  return catalogue.models
    .filter((m) => m.serves === serves && !(m.shutdown !== null && m.shutdown <= today))
    .map((m) => m.id);
}

/**
 * The model a setting names, or the catalogue's default: throws (failing the synth) when it is
 * not in the catalogue, cannot serve `serves`, or was shut down by `today`. A token (a
 * parameter's value) is passed through: the parameter's AllowedValues checks it.
 */
export function checkModel(
  catalogue: ModelCatalogue,
  setting: string,
  value: string | undefined,
  serves: Serves,
  today: string,
): string {
  const id = value ?? (serves === 'edit' ? catalogue.defaults.image : catalogue.defaults.vision);
  if (Token.isUnresolved(id)) return id;
  const usable = usableModels(catalogue, serves, today).join(', ');
  const model = catalogue.models.find((m) => m.id === id);
  if (!model) throw new Error(`${setting}: ${id} is not in the model catalogue (infra/models.json); use one of: ${usable}`);
  if (model.serves !== serves) throw new Error(`${setting}: ${id} cannot serve the ${serves} calls; use one of: ${usable}`);
  if (model.shutdown !== null && model.shutdown <= today) {
    throw new Error(`${setting}: ${id} was shut down by its provider on ${model.shutdown}; use one of: ${usable}`);
  }
  return id;
}

export interface ModelAlarmProps {
  readonly catalogue: ModelCatalogue;
  readonly consumer: lambda.IFunction;
  readonly sweeper: lambda.IFunction;
  /** Makes an alarm with the stack's notification action. */
  readonly alarm: (id: string, props: cloudwatch.AlarmProps) => cloudwatch.Alarm;
}

/**
 * The shutdown warning (daily, from the sweeper's audit task), the outage alarm, and one alarm
 * per provider whose circuit breaker opened (ProviderBreakerOpen<provider>).
 */
export function addModelAlarms(p: ModelAlarmProps): void {
  const { metrics, shutdown_warning_days: days } = p.catalogue;
  p.alarm('ModelShutdownNear', {
    alarmDescription:
      `A configured model is ${days} days or fewer from its provider's announced shutdown (or past it): after that day every edit fails. ` +
      'The sweeper logs model_shutdown_near with the model; choose a current one from infra/models.json (ImageModel / VisionModel) and deploy.',
    metric: new cloudwatch.Metric({
      namespace: metrics.namespace,
      metricName: metrics.days_to_shutdown,
      dimensionsMap: { FunctionName: p.sweeper.functionName },
      period: Duration.days(1),
      statistic: 'Minimum',
    }),
    threshold: days,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  p.alarm('ModelUnavailable', {
    alarmDescription:
      'The provider answered "no such model" (model_not_found) for the configured model: every job fails (each is refunded) until the ' +
      'configuration names a model it serves. The consumer logs model_unavailable with the model; choose a current one from infra/models.json and deploy.',
    metric: new cloudwatch.Metric({
      namespace: metrics.namespace,
      metricName: metrics.model_unavailable,
      dimensionsMap: { FunctionName: p.consumer.functionName },
      period: Duration.minutes(5),
      statistic: 'Sum',
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  for (const provider of p.catalogue.providers) {
    const id = provider.charAt(0).toUpperCase() + provider.slice(1);
    p.alarm(`ProviderBreakerOpen${id}`, {
      alarmDescription:
        `The ${provider} circuit breaker opened: ${provider} failed definitely (connection refused, 429, 5xx, no such model) ATELIER_BREAKER_FAILURES times in a row, ` +
        'so its calls go straight to the next provider of ATELIER_EDIT_PROVIDERS / ATELIER_VISION_PROVIDERS, or fail and are refunded when none is left. ' +
        'It re-fires while each probe after a cool-down fails, and clears once a probe succeeds (provider_breaker_closed in the consumer log). See docs/operations.md.',
      metric: new cloudwatch.Metric({
        namespace: metrics.namespace,
        metricName: metrics.provider_breaker,
        dimensionsMap: { FunctionName: p.consumer.functionName, Provider: provider, Transition: 'opened' },
        period: Duration.minutes(5),
        statistic: 'Sum',
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }
}
