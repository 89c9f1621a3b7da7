/**
 * Every metric name the code emits (shared/src/adapters/metrics/, `atelier-admin metrics`,
 * committed as `infra/metrics.json` by `cargo xtask infra-schema` and drift-guarded): alarms and
 * the dashboard name metrics from here, so a renamed metric cannot leave an alarm watching
 * nothing.
 */
import { readFileSync } from 'fs';
import { join } from 'path';

interface MetricCatalogue {
  readonly namespace: string;
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, string>>;
}

export const METRICS_PATH = join(__dirname, '..', 'metrics.json');

const catalogue = JSON.parse(readFileSync(METRICS_PATH, 'utf8')) as MetricCatalogue;

/** The namespace every Atelier metric is in. */
export const METRIC_NAMESPACE: string = catalogue.namespace;

/** The CloudWatch name of the metric the code calls `key` (lower camel case); throws on a name the code does not emit. */
export function metricName(key: string): string {
  const name = catalogue.names[key];
  if (name === undefined) {
    throw new Error(`${METRICS_PATH}: no metric ${key} (see atelier-admin metrics)`);
  }
  return name;
}

/** Every metric name the code emits. */
export const EMITTED_METRICS: ReadonlySet<string> = new Set(Object.values(catalogue.names));

/** A dimension value alarms select on (e.g. `paymentReversed`), as the code emits it; throws on an unknown key. */
export function metricValue(key: string): string {
  const value = catalogue.values[key];
  if (value === undefined) {
    throw new Error(`${METRICS_PATH}: no alarmed value ${key} (see atelier-admin metrics)`);
  }
  return value;
}
