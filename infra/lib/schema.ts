/**
 * The DynamoDB tables as the code defines them (`atelier-admin schema`, committed as
 * `infra/schema.json`), and the drift guard that compares them with a synthesized template.
 *
 * The stack creates its tables FROM this file, so a table or index added in
 * `shared/src/store/schema/` reaches AWS by `cargo xtask infra-schema` alone; the guard
 * (`tableDrift`) proves the template still says exactly what the code says.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export type KeyType = 'S' | 'N' | 'B';

export interface KeyDef {
  readonly name: string;
  readonly type: KeyType;
}

export interface IndexDef {
  readonly name: string;
  readonly partition_key: KeyDef;
  readonly sort_key: KeyDef | null;
}

export interface TableDef {
  /** Logical name (`accounts`, `ledger`, …). */
  readonly logical: string;
  /** The environment variable that carries the physical name. */
  readonly env: string;
  readonly partition_key: KeyDef;
  readonly sort_key: KeyDef | null;
  /** Global secondary indexes, projection ALL. */
  readonly indexes: readonly IndexDef[];
  readonly ttl_attribute: string | null;
}

/** The committed copy the stack is built from. */
export const SCHEMA_PATH = join(__dirname, '..', 'schema.json');

/** Reads and checks a schema file (the committed copy, or the code's live output). */
export function loadSchema(path: string = SCHEMA_PATH): TableDef[] {
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new Error(`${path}: expected a non-empty JSON array of tables`);
  }
  const seen = new Set<string>();
  for (const t of parsed as TableDef[]) {
    if (typeof t.logical !== 'string' || !/^[a-z][a-z0-9_]*$/.test(t.logical)) {
      throw new Error(`${path}: bad logical table name ${JSON.stringify(t.logical)}`);
    }
    if (seen.has(t.logical)) throw new Error(`${path}: table ${t.logical} twice`);
    seen.add(t.logical);
    if (typeof t.env !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(t.env)) {
      throw new Error(`${path}: table ${t.logical} has no environment variable name`);
    }
    checkKey(path, t.logical, t.partition_key);
    if (t.sort_key) checkKey(path, t.logical, t.sort_key);
    if (!Array.isArray(t.indexes)) throw new Error(`${path}: ${t.logical}.indexes is not a list`);
    for (const i of t.indexes) {
      checkKey(path, `${t.logical}.${i.name}`, i.partition_key);
      if (i.sort_key) checkKey(path, `${t.logical}.${i.name}`, i.sort_key);
    }
  }
  return parsed as TableDef[];
}

function checkKey(path: string, where: string, k: KeyDef | undefined): void {
  if (!k || typeof k.name !== 'string' || !['S', 'N', 'B'].includes(k.type)) {
    throw new Error(`${path}: ${where} has a malformed key ${JSON.stringify(k)}`);
  }
}

/**
 * What a table looks like in a normalised form both sides can produce: the schema file, and
 * an `AWS::DynamoDB::Table` resource of a synthesized template.
 */
export interface TableShape {
  readonly keys: string;
  readonly indexes: Record<string, string>;
  readonly ttl: string | null;
}

function keyString(pk: KeyDef, sk: KeyDef | null): string {
  return sk ? `${pk.name}:${pk.type} + ${sk.name}:${sk.type}` : `${pk.name}:${pk.type}`;
}

export function schemaShapes(schema: readonly TableDef[]): Record<string, TableShape> {
  const out: Record<string, TableShape> = {};
  for (const t of schema) {
    const indexes: Record<string, string> = {};
    for (const i of t.indexes) indexes[i.name] = `${keyString(i.partition_key, i.sort_key)} (ALL)`;
    out[t.logical] = { keys: keyString(t.partition_key, t.sort_key), indexes, ttl: t.ttl_attribute };
  }
  return out;
}

/** The metadata key under which the stack tags each table resource with its logical name. */
export const LOGICAL_TABLE_METADATA = 'atelier:table';

// The shapes of the CloudFormation we read back.
interface CfnKey {
  AttributeName: string;
  KeyType: 'HASH' | 'RANGE';
}
interface CfnTable {
  Type: string;
  Metadata?: Record<string, unknown>;
  Properties: {
    KeySchema: CfnKey[];
    AttributeDefinitions: { AttributeName: string; AttributeType: KeyType }[];
    GlobalSecondaryIndexes?: {
      IndexName: string;
      KeySchema: CfnKey[];
      Projection?: { ProjectionType?: string };
    }[];
    TimeToLiveSpecification?: { AttributeName?: string; Enabled?: boolean };
  };
}

/** Reads the tables of a synthesized template back into shapes, by logical table name. */
export function templateShapes(template: { Resources?: Record<string, unknown> }): Record<string, TableShape> {
  const out: Record<string, TableShape> = {};
  for (const [id, raw] of Object.entries(template.Resources ?? {})) {
    const r = raw as CfnTable;
    if (r.Type !== 'AWS::DynamoDB::Table') continue;
    const logical = r.Metadata?.[LOGICAL_TABLE_METADATA];
    if (typeof logical !== 'string') {
      throw new Error(`table resource ${id} carries no ${LOGICAL_TABLE_METADATA} metadata`);
    }
    const types = new Map(r.Properties.AttributeDefinitions.map((a) => [a.AttributeName, a.AttributeType]));
    const keys = (schema: CfnKey[]): string => {
      const part = (kind: 'HASH' | 'RANGE') => {
        const k = schema.find((s) => s.KeyType === kind);
        return k ? `${k.AttributeName}:${types.get(k.AttributeName) ?? '?'}` : undefined;
      };
      const [h, s] = [part('HASH'), part('RANGE')];
      return s ? `${h} + ${s}` : `${h}`;
    };
    const indexes: Record<string, string> = {};
    for (const g of r.Properties.GlobalSecondaryIndexes ?? []) {
      indexes[g.IndexName] = `${keys(g.KeySchema)} (${g.Projection?.ProjectionType ?? '?'})`;
    }
    const ttlSpec = r.Properties.TimeToLiveSpecification;
    const ttl = ttlSpec?.Enabled ? (ttlSpec.AttributeName ?? null) : null;
    if (out[logical]) throw new Error(`two table resources claim ${logical}`);
    out[logical] = { keys: keys(r.Properties.KeySchema), indexes, ttl };
  }
  return out;
}

/**
 * Every difference between the tables of a template and a schema, as sentences; empty when
 * they agree. This is the drift guard.
 */
export function tableDrift(
  template: { Resources?: Record<string, unknown> },
  schema: readonly TableDef[],
): string[] {
  const want = schemaShapes(schema);
  const have = templateShapes(template);
  const problems: string[] = [];
  for (const name of Object.keys(want)) {
    const w = want[name]!;
    const h = have[name];
    if (!h) {
      problems.push(`table ${name} is in the code's schema but not in the template`);
      continue;
    }
    if (w.keys !== h.keys) problems.push(`table ${name}: keys are ${h.keys}, the code says ${w.keys}`);
    if (w.ttl !== h.ttl) problems.push(`table ${name}: TTL attribute is ${h.ttl}, the code says ${w.ttl}`);
    for (const [idx, shape] of Object.entries(w.indexes)) {
      if (!(idx in h.indexes)) problems.push(`table ${name}: index ${idx} is missing from the template`);
      else if (h.indexes[idx] !== shape) {
        problems.push(`table ${name}: index ${idx} is ${h.indexes[idx]}, the code says ${shape}`);
      }
    }
    for (const idx of Object.keys(h.indexes)) {
      if (!(idx in w.indexes)) problems.push(`table ${name}: index ${idx} is in the template but not in the code`);
    }
  }
  for (const name of Object.keys(have)) {
    if (!(name in want)) problems.push(`table ${name} is in the template but not in the code's schema`);
  }
  return problems;
}
