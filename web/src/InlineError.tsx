import { useEffect, useRef } from 'react';

/** An error shown where the person acted, with focus moved to it (so it is scrolled into view
 *  and read out); it disappears when the message is cleared. */
export function InlineError(props: { message: string | null }) {
  const ref = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (props.message) ref.current?.focus();
  }, [props.message]);
  if (!props.message) return null;
  return (
    <p role="alert" className="error" tabIndex={-1} ref={ref}>
      {props.message}
    </p>
  );
}
