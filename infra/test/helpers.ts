/**
 * Shared by the tests: synthesize the stack offline (placeholder code, no credentials) once per
 * configuration, and read its template the way the assertions need.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';

import { type Arch, AtelierStack, type AtelierStackProps, type FunctionKey, type Stage } from '../lib/atelier-stack';
import { type EnvName, loadEnvNames } from '../lib/environment';
import { type Cors, loadCors } from '../lib/cors';
import { type TableDef, loadSchema } from '../lib/schema';

export interface Synth {
  readonly app: App;
  readonly stack: AtelierStack;
  readonly template: Template;
  readonly json: CfnTemplate;
}

export interface CfnResourceJson {
  Type: string;
  Properties?: Record<string, any>;
  Metadata?: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  Condition?: string;
}
export interface CfnTemplate {
  Resources: Record<string, CfnResourceJson>;
  Parameters?: Record<string, any>;
  Conditions?: Record<string, unknown>;
  Outputs?: Record<string, any>;
  Rules?: Record<string, any>;
}

const cache = new Map<string, Synth>();

export function synth(
  stage: Stage = 'dev',
  extra: Partial<AtelierStackProps> & { arch?: Arch } = {},
): Synth {
  const key = JSON.stringify([stage, extra]);
  const hit = cache.get(key);
  if (hit) return hit;
  const app = new App();
  const stack = new AtelierStack(app, `Atelier-${stage}`, { stage, placeholderCode: true, ...extra });
  const template = Template.fromStack(stack);
  const made = { app, stack, template, json: template.toJSON() as CfnTemplate };
  cache.set(key, made);
  return made;
}

/** The code's live schema when the xtask passed it, else the committed copy. */
export function liveSchema(): { schema: TableDef[]; source: string } {
  const path = process.env.ATELIER_LIVE_SCHEMA;
  return path ? { schema: loadSchema(path), source: path } : { schema: loadSchema(), source: 'infra/schema.json' };
}

/** `atelier-admin cors` as `cargo xtask infra-test` passes it in, else the committed copy. */
export function liveCors(): { cors: Cors; source: string } {
  const path = process.env.ATELIER_LIVE_CORS;
  return path ? { cors: loadCors(path), source: path } : { cors: loadCors(), source: 'infra/cors.json' };
}

export function liveEnvNames(): { names: EnvName[]; source: string } {
  const path = process.env.ATELIER_LIVE_ENV_NAMES;
  return path ? { names: loadEnvNames(path), source: path } : { names: loadEnvNames(), source: 'infra/env-names.json' };
}

export function resourcesOfType(t: CfnTemplate, type: string): [string, CfnResourceJson][] {
  return Object.entries(t.Resources).filter(([, r]) => r.Type === type);
}

/** The logical id of a function's resource. */
export function functionId(s: Synth, key: FunctionKey): string {
  return s.stack.getLogicalId(s.stack.functions[key].node.defaultChild as any);
}

/** The logical id of a table's resource, by the schema's logical name. */
export function tableId(s: Synth, logical: string): string {
  const table = s.stack.tables[logical];
  if (!table) throw new Error(`no table ${logical}`);
  return s.stack.getLogicalId(table.node.defaultChild as any);
}

export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** Every IAM statement attached to a function's role (inline policies of the template). */
export function statementsOf(s: Synth, key: FunctionKey): Statement[] {
  const fn = s.json.Resources[functionId(s, key)]!;
  const roleId = fn.Properties!.Role['Fn::GetAtt'][0] as string;
  const role = s.json.Resources[roleId]!;
  const out: Statement[] = [];
  for (const p of role.Properties?.Policies ?? []) out.push(...p.PolicyDocument.Statement);
  for (const [, r] of resourcesOfType(s.json, 'AWS::IAM::Policy')) {
    const roles: unknown[] = r.Properties!.Roles ?? [];
    if (roles.some((x: any) => x?.Ref === roleId)) out.push(...r.Properties!.PolicyDocument.Statement);
  }
  if (role.Properties?.ManagedPolicyArns?.length) throw new Error(`${key}'s role has managed policies`);
  return out;
}

export function actionsOf(st: Statement): string[] {
  return Array.isArray(st.Action) ? st.Action : [st.Action];
}

/** The logical ids a statement's resources point at (GetAtt/Ref, also inside Fn::Join). */
export function referencedIds(resource: unknown): string[] {
  const ids = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.Ref === 'string') ids.add(o.Ref);
      const ga = o['Fn::GetAtt'];
      if (Array.isArray(ga) && typeof ga[0] === 'string') ids.add(ga[0]);
      Object.values(o).forEach(walk);
    }
  };
  walk(resource);
  return [...ids];
}

/** Actions a function may perform on a resource (by logical id). */
export function actionsOn(s: Synth, key: FunctionKey, logicalId: string): Set<string> {
  const out = new Set<string>();
  for (const st of statementsOf(s, key)) {
    if (st.Effect !== 'Allow') continue;
    if (referencedIds(st.Resource).includes(logicalId)) actionsOf(st).forEach((a) => out.add(a));
  }
  return out;
}
