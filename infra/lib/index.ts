/**
 * The public surface of the packed construct (`npm run pack:construct` builds it; infra/README.md
 * "Atelier in your own CDK app"). Everything else in lib/ is internal.
 */
export {
  AtelierService,
  type AtelierServiceProps,
  type Arch,
  type CreditPack,
  type FunctionKey,
  type Stage,
  BUDGET_ALERT_PERCENTS,
  DEFAULTS,
  FUNCTIONS,
  OUTAGE_CODES,
  REVERSALS_ALARM_PER_HOUR,
} from './atelier-service';
