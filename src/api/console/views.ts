/** What renders the console's pages of signing in, sessions and tokens (src/web/console): the HTTP layer hands it data, it gives HTML. */
import type { SessionView } from "../../service/console-sessions";
import type { ReadTokenView } from "../../service/owner-tokens";
import type { ConsoleLocals, ConsoleRefusal } from "./session";

/** The console's script file (src/web/console/browser, built into dist/): where it is served, and its bytes. */
export type ConsoleScript = { path: string; body: Buffer };

export type SignInView = {
  /** Where to go once signed in (a path under /console). */
  next: string;
  /** What went wrong with the last try, in words. */
  error?: string;
  /** What just happened (signed out), in words. */
  notice?: string;
};

export type SessionsView = { viewer: ConsoleLocals; sessions: SessionView[]; notice?: string; error?: string };

export type TokensView = {
  viewer: ConsoleLocals;
  tokens: ReadTokenView[];
  /** A token made by this request, shown this once: a new read-only token, or the new owner token. */
  shown?: { kind: "read"; name: string; token: string } | { kind: "owner"; token: string };
  notice?: string;
  error?: string;
};

/** The console's pages of this layer, each a whole HTML document. */
export type ConsoleViews = {
  signIn(view: SignInView): string;
  sessions(view: SessionsView): string;
  tokens(view: TokensView): string;
  /** A refusal or an error a person can act on; `viewer` when signed in (the page keeps the console's navigation). */
  refusal(view: ConsoleRefusal & { viewer?: ConsoleLocals }): string;
  /** The script file, or null when it is not built (`npm run build`): pages then work without it. */
  script: ConsoleScript | null;
};
