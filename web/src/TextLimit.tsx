// A text a person types, with its limit shown as they type and nothing cut: a pasted text over
// the limit stays as pasted, says how much too long it is, and the form refuses to send it.
// The limits are the API's (`maxLength` in its OpenAPI document; `npm run check:api` fails if
// this copy differs).

/** The API's `maxLength` of each text a person types. */
export const TEXT_LIMITS = {
  /** `EditRequest.target_description`: "which one?", and the answer to the checker's question. */
  description: 200,
  /** `RepairRequest.instruction`. */
  instruction: 300,
} as const;

/** Characters as the API counts them (Unicode scalar values, not UTF-16 units). */
export function charCount(text: string): number {
  return Array.from(text).length;
}

export function overLimit(text: string, limit: number): boolean {
  return charCount(text) > limit;
}

/** The counter under a limited field, tied to it by `aria-describedby`. */
export function LimitNote(props: { id: string; text: string; limit: number }) {
  const n = charCount(props.text);
  const over = n - props.limit;
  return (
    <p id={props.id} className={over > 0 ? 'hint over' : 'hint'} data-testid={props.id} aria-live="polite">
      {over > 0 ? `${String(over)} character${over === 1 ? '' : 's'} too many (${String(n)} / ${String(props.limit)})` : `${String(n)} / ${String(props.limit)}`}
    </p>
  );
}
