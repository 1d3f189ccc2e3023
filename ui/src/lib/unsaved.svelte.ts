// Unsaved Settings changes (issue #14 item 4): the Settings view says whether its form differs
// from what is saved and how to save or discard it; the app asks before leaving the view.

/** The Settings form's state, kept by the Settings view while it is open. */
export const unsaved: {
  /** The form differs from the saved settings. */
  dirty: boolean;
  /** Save the form; `true` when it was saved. */
  save: (() => Promise<boolean>) | null;
  /** Drop the form's changes (and any key stored for a profile that was never saved). */
  discard: (() => Promise<void>) | null;
} = $state({ dirty: false, save: null, discard: null });

/** Entries whose keys should leave the keyring: in `before` but in no profile of `after`. */
export function orphanedEntries(before: string[], after: string[]): string[] {
  const keep = new Set(after.filter((e) => e));
  return [...new Set(before.filter((e) => e && !keep.has(e)))];
}

/**
 * The saved settings (`pristine`, JSON of `AppSettings`, or `''` before they are loaded) with
 * `lang` set: the language switch saves the language at once, so switching it is no unsaved edit.
 */
export function withSavedLang(pristine: string, lang: string): string {
  if (!pristine) return pristine;
  const v = JSON.parse(pristine) as { lang?: string };
  if (v.lang === lang) return pristine;
  return JSON.stringify({ ...v, lang });
}
